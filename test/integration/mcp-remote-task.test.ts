/**
 * A remote MCP server through the whole task path: a real streamable HTTP server (the SDK's McpServer on
 * loopback), configured as a `type: http` entry pasted from a Claude Code `.mcp.json` into klea.yaml, reached by
 * the worker's MCP pool on a real Temporal dev server, offered to the picker beside the workspace server's tools
 * with its annotations respected, and called by a task.
 */
import { parse } from 'yaml';
import { resolveConfig } from '../../common/config-resolve';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { startNotesServer, type NotesServer } from '../support/notes-server';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';

const TOKEN_VAR = 'KLEA_TEST_REMOTE_NOTES_TOKEN';
const token = `notes-${process.pid}`;

describe('a remote streamable HTTP MCP server in a task', () => {
  let notes: NotesServer;
  let fake: FakeModel;
  let env: TestEnv;

  // Registered before the suite's own set-up, so the server's port is known when the worker's config is built.
  beforeAll(async () => {
    process.env[TOKEN_VAR] = token;
    notes = await startNotesServer({ token, notes: [{ title: 'Groceries', text: 'oat milk, coffee' }] });
  });
  afterAll(async () => {
    delete process.env[TOKEN_VAR];
    await notes?.close();
  });

  useFakeModelEnv(
    {
      name: 'mcp-remote',
      overrides: () => {
        // klea.yaml as a user writes it: Claude Code's .mcp.json pasted under `mcp:`, the token from the environment.
        const kleaYaml = `
mcp:
  {
    "mcpServers": {
      "notes": {
        "type": "http",
        "url": "${notes.origin}/mcp",
        "headers": { "Authorization": "Bearer \${${TOKEN_VAR}}" }
      }
    }
  }
`;
        return { mcp: resolveConfig(parse(kleaYaml), {}).mcp };
      },
    },
    (f, e) => {
      fake = f;
      env = e;
    }
  );

  it('offers its tools with their annotations, and a task calls one through the pool', async () => {
    const p = makeProject({ 'README.md': 'a project\n' });
    fake.on('write_plan', { call: plan([step('s1', 'Add a note to call Ana about the lease')]) });
    fake.on('pick_tools', {
      calls: [{ name: 'notes__add_note', args: { step_id: 's1', title: 'Call Ana', text: 'about the lease' } }],
    });
    fake.on('compose_answer', { content: 'I added the note.' });

    const t = await TaskDriver.start(env, 'Remind me to call Ana about the lease', p.dir);
    const result = await t.result();

    expect(result).toMatchObject({ status: 'done', answer: 'I added the note.' });
    const offered = fake.requestsFor('pick_tools')[0].toolSchemas;
    expect(offered.map((f) => f.name)).toEqual(
      expect.arrayContaining(['workspace__write_file', 'notes__search_notes', 'notes__add_note'])
    );
    expect(offered.find((f) => f.name === 'notes__add_note')?.parameters).toMatchObject({
      required: ['step_id', 'title', 'text', 'step_done'],
    });
    const [s1] = (await t.state()).steps;
    expect(s1).toMatchObject({ id: 's1', status: 'done', result: expect.stringContaining('added note "Call Ana"') });
    expect(notes.notes).toContainEqual({ title: 'Call Ana', text: 'about the lease' });
    expect(notes.requests.every((r) => r.authorization === `Bearer ${token}`)).toBe(true);

    // add_note has no annotations, so it counts as a tool that writes: attempted once, never retried blindly.
    const history = await t.handle.fetchHistory();
    const callTool = (history.events ?? [])
      .map((e) => e.activityTaskScheduledEventAttributes)
      .find((a) => a?.activityType?.name === 'callTool');
    expect(callTool?.retryPolicy?.maximumAttempts).toBe(1);
  });

  it('under read_only, offers only its read-only tool, and a task reads through it', async () => {
    const p = makeProject();
    fake.on('write_plan', { call: plan([step('s1', 'Look up what is on the grocery list')]) });
    fake.on('pick_tools', { calls: [{ name: 'notes__search_notes', args: { step_id: 's1', query: 'milk' } }] });
    fake.on('compose_answer', { content: 'Oat milk and coffee.' });
    const before = notes.notes.length;

    const t = await TaskDriver.start(env, 'What is on my grocery list?', p.dir, { toolAccess: 'read_only' });
    const result = await t.result();

    // A read-only task's answer says under it that nothing was changed.
    expect(result).toMatchObject({
      status: 'done',
      answer: 'Oat milk and coffee.\n\n_Read-only access: no file was changed and no command was run._',
    });
    const offered = fake.requestsFor('pick_tools')[0].tools;
    expect(offered).toContain('notes__search_notes');
    expect(offered).toContain('workspace__read_file');
    expect(offered).not.toContain('notes__add_note');
    expect(offered).not.toContain('workspace__write_file');
    expect((await t.state()).steps[0]).toMatchObject({
      status: 'done',
      result: expect.stringContaining('Groceries: oat milk, coffee'),
    });
    expect(notes.notes.length).toBe(before);
  });
});
