/**
 * `klea mcp list | approve <server> [--yes] | revoke <server>`, on the worker's machine (KLEA_DATA_DIR): the MCP
 * servers of klea.yaml that wait for the user's approval of what they run (runtime/mcp-approvals.ts), and the
 * decision on one.
 */
import readline from 'node:readline';
import { approvalsFile, approve, readApprovals, revoke, type LaunchShown } from '../runtime/mcp-approvals';
import { one } from './page-modules';
import { usage } from './usage';

/** What a configured MCP server runs, as the person approving it reads it. */
function describeLaunch(name: string, l: LaunchShown): string {
  const quote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`);
  const lines = [
    `  ${one(name)} runs:`,
    `    command line: ${one([l.command, ...l.args].map(quote).join(' '))}`,
    `    working directory: ${one(l.cwd)}`,
    `    environment: ${Object.keys(l.env).length ? '' : '(nothing set)'}`,
    ...Object.entries(l.env).map(([k, v]) => `      ${one(k)}=${one(v)}`),
    `    files: ${l.files.length ? '' : '(none found)'}`,
    ...l.files.map((f) => `      ${one(f.path)} (sha256 ${f.sha256 ?? 'unreadable'})`),
  ];
  return lines.join('\n');
}

/**
 * `klea mcp list|approve|revoke`: the configured MCP servers that wait for the user's approval (a server that runs a
 * program starts only once what it runs was approved, and asks again when it changes), and the decision.
 */
export async function mcp(
  args: string[],
  io: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream },
  env: NodeJS.ProcessEnv = process.env
): Promise<number> {
  const say = (s: string) => io.output.write(`${s}\n`);
  const [what, name, ...rest] = args;
  const doc = readApprovals(env);
  if (what === 'list' || what === undefined) {
    const pending = Object.entries(doc.pending);
    say(`${approvalsFile(env)}:`);
    if (!pending.length) say('no MCP server waits for approval');
    for (const [n, p] of pending) {
      say(`waiting${p.changed ? ' (what it runs changed since it was approved)' : ''}, since ${p.at}:`);
      say(describeLaunch(n, p.launch));
    }
    for (const [n, a] of Object.entries(doc.approved)) say(`approved: ${one(n)} (${a.at})`);
    return 0;
  }
  if (what === 'revoke' && name) {
    say(
      revoke(name, env) ? `revoked ${one(name)}: it asks again before it next starts` : `${one(name)} was not approved`
    );
    return 0;
  }
  if (what !== 'approve' || !name) usage('mcp takes list, approve <server> or revoke <server>');
  const pending = doc.pending[name];
  if (!pending) {
    say(
      doc.approved[name]
        ? `${one(name)} is approved as it runs now`
        : `no MCP server named ${one(name)} waits for approval (a server is listed once the worker has tried to start it)`
    );
    return doc.approved[name] ? 0 : 1;
  }
  say(describeLaunch(name, pending.launch));
  const yes =
    rest.includes('--yes') ||
    (await new Promise<boolean>((resolve) => {
      const rl = readline.createInterface({ input: io.input, output: io.output });
      rl.question(`start ${one(name)} as shown above, now and until it changes? [y/N] `, (a) => {
        rl.close();
        resolve(/^y(es)?$/i.test(a.trim()));
      });
    }));
  if (!yes) {
    say('not approved');
    return 1;
  }
  approve(name, pending.fingerprint, env);
  say(`approved ${one(name)}: the worker starts it at its next use`);
  return 0;
}
