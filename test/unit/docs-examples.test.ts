/**
 * Every `curl` line of the README and docs/*.md is a request the API understands: bash runs each shell example (with
 * `curl` and `jq` stood in for, so the shell does the quoting), and each recorded request goes to the real app. With
 * no Temporal behind it, a request that passes the API's own checks (route, Host, content type, ids, the body's
 * schema) goes on to wait for Temporal (or answers 503 saying it is not there); an example with a wrong route,
 * field or header is answered at once with 400, 404 or 415 instead.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { Client, Connection } from '@temporalio/client';
import { createApp } from '../../api/app';
import { resolveConfig } from '../../common/config-resolve';

const ROOT = path.join(__dirname, '..', '..');
const PAGES = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).map((f) => path.join('docs', f))].filter((f) =>
  f.endsWith('.md')
);

/** The runnable part of each `sh` block that uses curl: curl commands and variable assignments, comments dropped. */
function curlScripts(page: string): string[] {
  const text = readFileSync(path.join(ROOT, page), 'utf8');
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((m) => m[1].replace(/\\\n\s*/g, ' '))
    .filter((block) => /\bcurl\b/.test(block))
    .map((block) =>
      block
        .split('\n')
        .map((line) => line.replace(/\s+#[^'"]*$/, '').trim())
        .filter((line) => /^(curl\b|[A-Z]+=)/.test(line))
        .join('\n')
    );
}

interface Recorded {
  page: string;
  args: string[];
}

/** Runs a script with curl and jq stood in for; returns each curl call's arguments as bash parsed them. */
function recordCalls(page: string, script: string, dir: string): Recorded[] {
  const log = path.join(dir, 'calls');
  rmSync(log, { force: true });
  const prelude = [
    `curl() { printf '%s\\0' "$@" >> ${JSON.stringify(log)}; printf '\\n' >> ${JSON.stringify(log)}; echo '{}'; }`,
    'jq() { cat > /dev/null; case "$*" in *sessionId*) echo s-1a2b3c4d;; *taskId*) echo task-s-1a2b3c4d-1;; ' +
      '*) echo 0123abcd;; esac; }',
  ].join('\n');
  execFileSync('bash', ['-euc', `${prelude}\n${script}`], { stdio: ['ignore', 'ignore', 'inherit'] });
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => ({ page, args: line.split('\0').filter(Boolean) }));
}

function asRequest(args: string[]): { method: string; url: URL; headers: Record<string, string>; body?: string } {
  let method = 'GET';
  let body: string | undefined;
  const headers: Record<string, string> = {};
  let url: URL | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a.startsWith('-X')) method = a.length > 2 ? a.slice(2) : args[++i];
    else if (a === '-H') {
      const [name, ...value] = args[++i].split(':');
      headers[name.trim().toLowerCase()] = value.join(':').trim();
    } else if (a === '-d') {
      body = args[++i];
      if (method === 'GET') method = 'POST';
    } else if (/^-[sN]+$/.test(a)) continue;
    else if (/^https?:\/\//.test(a)) url = new URL(a);
    else throw new Error(`an option this test does not know: ${a} (in curl ${args.join(' ')})`);
  }
  if (!url) throw new Error(`no URL in curl ${args.join(' ')}`);
  return { method, url, headers, body };
}

describe('the curl examples of the README and docs/', () => {
  const client = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1', connectTimeout: '1s' }) });
  // Every Temporal call the app makes ends at its deadline, well inside a request's 2 s: a call still retrying
  // when the connection closes would throw later, in whichever test file this process runs next.
  const CALL_DEADLINE_MS = 300;
  const app = createApp({
    client,
    config: resolveConfig({}, {}),
    callTimeoutMs: CALL_DEADLINE_MS,
    acceptTimeoutMs: CALL_DEADLINE_MS,
  });
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'klea-docs-'))));
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    // The last requests' calls have passed their deadlines before the connection goes.
    await new Promise((r) => setTimeout(r, 4 * CALL_DEADLINE_MS));
    await client.connection.close();
  });

  const scripts = PAGES.flatMap((page) => curlScripts(page).map((script) => ({ page, script })));

  it('are found: the first task in the README, the API page, the health check', () => {
    expect(scripts.map((s) => s.page)).toEqual(
      expect.arrayContaining(['README.md', 'docs/api.md', 'docs/operating.md'])
    );
  });

  it.each(scripts.map((s, i) => [`${s.page} #${i + 1}`, s] as const))(
    '%s runs and every request is understood',
    async (_, s) => {
      const calls = recordCalls(s.page, s.script, dir);
      expect(calls.length).toBeGreaterThan(0);
      const answers = await Promise.all(
        calls.map(async (call) => {
          const { method, url, headers, body } = asRequest(call.args);
          const target = url.pathname + url.search;
          const what = `${method} ${target} ${body ?? ''} (${call.page})`;
          expect(`${url.protocol}//${url.host} ${what}`).toBe(`http://127.0.0.1:8080 ${what}`);
          let req = request(app)[method.toLowerCase() as 'get' | 'post' | 'patch'](target).timeout(2000);
          for (const [name, value] of Object.entries(headers)) req = req.set(name, value);
          try {
            const res = await (body !== undefined ? req.send(body) : req);
            return { what, status: res.status, error: res.body?.error?.code };
          } catch (err) {
            // Still waiting for Temporal (or an event stream kept open): the API took the request.
            if ((err as { timeout?: number }).timeout) return { what, status: 'sent on to Temporal' };
            throw err;
          }
        })
      );
      for (const a of answers) {
        const understood = a.status === 'sent on to Temporal' || [200, 201, 503].includes(a.status as number);
        expect({ ...a, understood }).toMatchObject({ understood: true });
      }
    }
  );
});
