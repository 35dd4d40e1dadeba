/**
 * `make proof` fuzzing: schemathesis (from PyPI) against /openapi.json of a running API (real Temporal dev
 * server, worker, fake model), with and without a token. Fails on any 5xx or any response that breaks the
 * document. Payload encryption is on, so the codec-server routes are in the document and fuzzed too.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeSync, mkdtempSync, openSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { createApp } from '../api/app';
import { REPO_ROOT } from '../runtime/temporal';
import { startStack } from '../test/support/stack';

const SCHEMATHESIS = process.env.SCHEMATHESIS ?? path.join(REPO_ROOT, '.tools', 'fuzz-venv', 'bin', 'schemathesis');
const MAX_EXAMPLES = process.env.KLEA_FUZZ_EXAMPLES ?? '30';

const REPORT_DIR = process.env.KLEA_REPORT_DIR;

/**
 * Runs schemathesis on a spec (a URL, or a file plus the base URL to call); `name` names its JUnit report and its
 * log. Its console output goes to the log and is printed only when it found something: its closing banner reads
 * like another test runner's "no tests ran" line, and the run's one verdict line is the summary's.
 */
function runSchemathesis(
  name: string,
  spec: string,
  headers: string[],
  baseUrl?: string
): Promise<{ code: number; log: string }> {
  const log = path.join(
    REPORT_DIR ?? mkdtempSync(path.join(os.tmpdir(), 'klea-fuzz-log-')),
    `schemathesis-${name}.log`
  );
  return new Promise((resolve) => {
    const args = [
      'run',
      ...(REPORT_DIR
        ? ['--report', 'junit', '--report-junit-path', path.join(REPORT_DIR, `schemathesis-${name}.xml`)]
        : []),
      spec,
      ...(baseUrl ? ['--url', baseUrl] : []),
      '--checks',
      'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance',
      '--max-examples',
      MAX_EXAMPLES,
      '--request-timeout',
      '20',
      '--generation-deterministic',
      '--no-color',
      ...headers.flatMap((h) => ['-H', h]),
    ];
    const out = openSync(log, 'w');
    const child = spawn(SCHEMATHESIS, args, { stdio: ['ignore', out, out] });
    child.on('close', (code) => {
      closeSync(out);
      const result = { code: code ?? 1, log };
      if (result.code !== 0) process.stdout.write(readFileSync(log, 'utf8'));
      resolve(result);
    });
  });
}

async function main() {
  const projectDir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-fuzz-')));
  const payloadKey = `fuzz:${randomBytes(32).toString('base64')}`;
  const stack = await startStack({ taskQueue: 'fuzz', projectDir, payloadKey });
  const { fake, client, config } = stack;
  fake.always('route_request', { call: { route: 'chat', reply: 'hello' } });
  fake.always('write_plan', {
    call: {
      goal: 'g',
      steps: [{ id: 's1', title: 't', instruction: 'i', depends_on: [], needs_tool: false, questions: [] }],
      review: { before_work: true, after_step_ids: [] },
    },
  });
  fake.always('do_step', { content: 'ok' });
  fake.always('compose_answer', { content: 'ok' });
  fake.always('summarize_memory', { content: 'summary' });
  fake.always('init_project', { content: '# AGENTS.md' });

  const token = 'fuzz-token-0123456789abcdef';
  const listen = async (withToken: boolean) => {
    const app = createApp({ client, config: { ...config, api: { ...config.api, token: withToken ? token : null } } });
    const srv = http.createServer(app);
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    return { srv, url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}` };
  };
  const open = await listen(false);
  const secured = await listen(true);
  const results: Array<[string, { code: number; log: string }]> = [];
  try {
    results.push(['without a token', await runSchemathesis('open', `${open.url}/openapi.json`, [])]);
    results.push([
      'with a token',
      await runSchemathesis('token', `${secured.url}/openapi.json`, [`Authorization: Bearer ${token}`]),
    ]);
    // The secured API's own document, called without the token: every route but /healthz must answer 401.
    const doc = await fetch(`${secured.url}/openapi.json`, { headers: { authorization: `Bearer ${token}` } }).then(
      (r) => r.text()
    );
    const docFile = path.join(projectDir, 'openapi.json');
    writeFileSync(docFile, doc);
    results.push([
      'with a token set, calling without it',
      await runSchemathesis('token-missing', docFile, [], secured.url),
    ]);
    if (results.some(([, r]) => r.code !== 0)) await printFailedWorkflowTasks(client);
  } finally {
    for (const s of [open.srv, secured.srv]) {
      s.closeAllConnections();
      s.close();
    }
    await stack.close();
  }
  for (const [what, { code, log }] of results)
    console.log(`fuzz ${what}: ${code === 0 ? 'no failures' : `FAILED (schemathesis exit ${code})`} (log: ${log})`);
  process.exit(results.every(([, r]) => r.code === 0) ? 0 : 1);
}

/** For a failed run: every workflow whose history holds a failed workflow task, with the events around it. */
async function printFailedWorkflowTasks(client: Client): Promise<void> {
  for await (const wf of client.workflow.list()) {
    const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
    const events = history.events ?? [];
    const failed = events.findIndex((e) => e.workflowTaskFailedEventAttributes);
    if (failed < 0) continue;
    const name = (e: (typeof events)[number]) => {
      const type = String(temporal.api.enums.v1.EventType[e.eventType ?? 0] ?? e.eventType).replace('EVENT_TYPE_', '');
      const signal = e.workflowExecutionSignaledEventAttributes?.signalName;
      const update = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name;
      const cause = e.workflowTaskFailedEventAttributes?.cause;
      return `${e.eventId} ${type}${signal ? ` (${signal})` : ''}${update ? ` (${update})` : ''}${cause ? ` cause=${temporal.api.enums.v1.WorkflowTaskFailedCause[cause]}` : ''}`;
    };
    console.error(`failed workflow task in ${wf.workflowId}:\n  ${events.map(name).join('\n  ')}`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
