/**
 * The hand-written Temporal agent's activities and worker (its workflow is ./hand-agent-workflows.ts). Each model
 * activity is one chat-completions request through `@langchain/openai` to the same fake model Klea uses, over
 * HTTP; the tool activity calls the same workspace MCP server over stdio, on a connection kept open per project
 * (as Klea's pool does), started with the same options as Klea's.
 */
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage, SystemMessage, type AIMessage } from '@langchain/core/messages';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { workspaceSpec } from '../activities/mcp/servers';
import type { FakeModel } from '../test/support/fake-model';
import type { BenchEnv } from './support';
import type { HandAgentInput, handAgentTask } from './hand-agent-workflows';

export interface HandAgentStep {
  id: string;
  instruction: string;
  dependsOn: string[];
}

export interface HandAgentCall {
  stepId: string;
  name: string;
  args: Record<string, unknown>;
}

/** The baseline's model nodes, scripted in the fake model beside Klea's. */
export const HAND_NODES = { plan: 'baseline_plan', pick: 'baseline_pick', answer: 'baseline_answer' } as const;

const PLAN_FUNCTION = {
  type: 'function' as const,
  function: {
    name: HAND_NODES.plan,
    description: 'The steps that carry out the request.',
    parameters: {
      type: 'object',
      properties: {
        steps: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              id: { type: 'string' },
              instruction: { type: 'string' },
              depends_on: { type: 'array', items: { type: 'string' } },
            },
            required: ['id', 'instruction', 'depends_on'],
          },
        },
      },
      required: ['steps'],
    },
  },
};

function createHandAgentActivities(env: BenchEnv) {
  const model = new ChatOpenAI({
    model: 'fake',
    apiKey: 'k',
    configuration: { baseURL: env.fake.url },
    maxRetries: 0,
    // Never streaming: LangChain would count tokens itself, fetching encodings from the internet.
    streaming: false,
  });
  const servers = new Map<string, Promise<{ client: McpClient; tools: Tool[] }>>();
  const connect = (projectDir: string) => {
    let server = servers.get(projectDir);
    if (!server) {
      // Klea's own options for the server (sandbox, state dir, sensitive patterns), without its grant key.
      const spec = workspaceSpec(env.config, projectDir, '');
      if (spec.kind !== 'stdio') throw new Error('the workspace server runs over stdio');
      const args = spec.args.filter((a, i, all) => a !== '--grant-key-fd' && all[i - 1] !== '--grant-key-fd');
      const transport = new StdioClientTransport({
        command: spec.command,
        args,
        env: spec.env,
        cwd: spec.cwd,
        stderr: 'ignore',
      });
      const client = new McpClient({ name: 'hand-agent', version: '1' });
      server = client.connect(transport).then(async () => ({ client, tools: (await client.listTools()).tools }));
      servers.set(projectDir, server);
    }
    return server;
  };
  const system = (node: string, text: string) => new SystemMessage(`# klea:${node}\n${text}`);

  const activities = {
    async plan(input: { request: string }): Promise<HandAgentStep[]> {
      const bound = model.bindTools([PLAN_FUNCTION], {
        tool_choice: { type: 'function', function: { name: HAND_NODES.plan } },
      });
      const reply = (await bound.invoke([
        system(HAND_NODES.plan, 'Write the steps that carry out the request.'),
        new HumanMessage(input.request),
      ])) as AIMessage;
      const steps = (reply.tool_calls?.[0]?.args as { steps?: Array<Record<string, unknown>> } | undefined)?.steps;
      if (!steps) throw new Error('the model wrote no plan');
      return steps.map((s) => ({
        id: String(s.id),
        instruction: String(s.instruction),
        dependsOn: (s.depends_on as string[] | undefined) ?? [],
      }));
    },

    async pick(input: {
      request: string;
      projectDir: string;
      steps: Array<HandAgentStep & { previous: string[] }>;
    }): Promise<HandAgentCall[]> {
      const { tools } = await connect(input.projectDir);
      const functions = tools.map((t) => ({
        type: 'function' as const,
        function: {
          name: t.name,
          description: t.description ?? '',
          parameters: {
            ...t.inputSchema,
            properties: { step_id: { type: 'string' }, ...(t.inputSchema.properties ?? {}) },
            required: ['step_id', ...(t.inputSchema.required ?? [])],
          },
        },
      }));
      const prompt = input.steps
        .map(
          (s) =>
            `Step ${s.id}: ${s.instruction}${s.previous.length ? `\nEarlier results:\n${s.previous.join('\n')}` : ''}`
        )
        .join('\n\n');
      const reply = (await model
        .bindTools(functions, { tool_choice: 'required' })
        .invoke([
          system(HAND_NODES.pick, 'Call the tools that carry out each step.'),
          new HumanMessage(`${input.request}\n\n${prompt}`),
        ])) as AIMessage;
      return (reply.tool_calls ?? []).map((c) => {
        const { step_id: stepId, ...args } = c.args as Record<string, unknown>;
        return { stepId: String(stepId), name: c.name, args };
      });
    },

    async callTool(input: { projectDir: string; name: string; args: Record<string, unknown> }): Promise<string> {
      const { client } = await connect(input.projectDir);
      const result = await client.callTool({ name: input.name, arguments: input.args });
      const text = (result.content as Array<{ type: string; text?: string }>)
        .map((c) => (c.type === 'text' ? c.text : `[${c.type}]`))
        .join('\n');
      if (result.isError) return `error: ${text}`;
      return text;
    },

    async answer(input: { request: string; results: string[] }): Promise<string> {
      const reply = await model.invoke([
        system(HAND_NODES.answer, 'Answer the request from the results.'),
        new HumanMessage(`${input.request}\n\nResults:\n${input.results.join('\n\n')}`),
      ]);
      return typeof reply.content === 'string' ? reply.content : JSON.stringify(reply.content);
    },
  };
  const close = async () => {
    for (const server of servers.values()) await (await server.catch(() => null))?.client.close();
  };
  return { activities, close };
}

export type HandAgentActivities = ReturnType<typeof createHandAgentActivities>['activities'];

/** Scripts the fake model for a baseline task of `steps` steps: a chain, or all independent. */
export function scriptHandAgent(
  fake: FakeModel,
  steps: number,
  opts: { chain: boolean; call: (stepId: string) => { name: string; args: Record<string, unknown> } }
): void {
  fake.on(HAND_NODES.plan, {
    call: {
      steps: Array.from({ length: steps }, (_, i) => ({
        id: `s${i + 1}`,
        instruction: 'do it',
        depends_on: opts.chain && i > 0 ? [`s${i}`] : [],
      })),
    },
  });
  fake.always(HAND_NODES.pick, (req) => {
    const ids = [...req.text.matchAll(/^Step (\S+):/gm)].map((m) => m[1]);
    return {
      calls: ids.map((id) => {
        const c = opts.call(id);
        return { name: c.name, args: { step_id: id, ...c.args } };
      }),
    };
  });
  fake.always(HAND_NODES.answer, { content: 'done' });
}

export interface HandAgent {
  queue: string;
  /** Runs one task in `projectDir`; resolves with its duration in ms. */
  run(projectDir: string, id: string): Promise<number>;
  stop(): Promise<void>;
}

/**
 * The agent's worker; with `hostQueue` (a cluster) a second worker in the same process polls the project host's
 * queue for the activities that use the project, as Klea's worker host does.
 */
export async function startHandAgent(env: BenchEnv, opts: { hostQueue?: string } = {}): Promise<HandAgent> {
  const queue = 'bench-hand-agent';
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('./hand-agent-workflows'),
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} },
  });
  const connection = await NativeConnection.connect({ address: env.server.address });
  const { activities, close } = createHandAgentActivities(env);
  const worker = await Worker.create({ connection, taskQueue: queue, workflowBundle: { code }, activities });
  const hostWorker = opts.hostQueue
    ? await Worker.create({ connection, taskQueue: opts.hostQueue, activities })
    : undefined;
  const running = Promise.all([worker.run(), hostWorker?.run()]);
  return {
    queue,
    async run(projectDir, id) {
      const input: HandAgentInput = {
        projectDir,
        request: 'bench',
        ...(opts.hostQueue ? { hostQueue: opts.hostQueue } : {}),
      };
      const started = performance.now();
      await env.client.workflow.execute<typeof handAgentTask>('handAgentTask', {
        taskQueue: queue,
        workflowId: `hand-agent-${id}`,
        args: [input],
      });
      return performance.now() - started;
    },
    async stop() {
      worker.shutdown();
      hostWorker?.shutdown();
      await running;
      await close();
      await connection.close();
    },
  };
}
