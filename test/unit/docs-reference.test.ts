/**
 * The docs name everything a user or a newcomer looks up, and this test keeps them so: it fails when the code has
 * something the reference pages do not name.
 *
 * - every environment variable Klea reads (`KLEA_*` anywhere in the code, and each override of common/config-resolve.ts)
 *   is in docs/configuration.md;
 * - every configuration key (a path of common/config.ts's schema) is in docs/configuration.md;
 * - every API route is in docs/api.md's table and in docs/architecture.md §8;
 * - every recorded history of the replay suite is named in docs/changing-workflow-code.md;
 * - every top-level folder of the code, and every folder of workflows/ and activities/, is in docs/architecture.md
 *   §2's code map.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { Client, Connection } from '@temporalio/client';
import type { z } from 'zod';
import { createApp } from '../../api/app';
import { ConfigSchema } from '../../common/config';
import { ENV_OVERRIDES, resolveConfig } from '../../common/config-resolve';

const ROOT = path.join(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
/** The repository's files (git's list; in a copy without git, every file but the ignored folders'). */
function tracked(): string[] {
  try {
    return execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .split('\0')
      .filter(Boolean);
  } catch {
    const ignored = new Set(['.git', 'node_modules', 'dist', '.tools', '.klea', 'coverage', 'test-artifacts']);
    return readdirSync(ROOT, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
      .filter((f) => !f.split('/').some((part) => ignored.has(part)));
  }
}

/** One section of a page: from its `## N.` heading to the next `## ` heading. */
function section(page: string, n: number): string {
  const text = read(page);
  const start = text.search(new RegExp(`^## ${n}\\. `, 'm'));
  if (start < 0) throw new Error(`${page} has no section ${n}`);
  const end = text.slice(start + 1).search(/^## /m);
  return end < 0 ? text.slice(start) : text.slice(start, start + 1 + end);
}

/**
 * The `KLEA_*` variables the code reads: `process.env.KLEA_X`, `env.KLEA_X`, `env['KLEA_X']`, an env name given as a
 * string (`env: 'KLEA_X'`, `X_ENV = 'KLEA_X'`), and `$KLEA_X` / `${KLEA_X…}` in shell, the Makefile and compose
 * files. The tests' own variables are left out (test/).
 */
function variablesRead(): Map<string, string> {
  const found = new Map<string, string>();
  const reads = [
    /\benv(?:\.|\[['"])(KLEA_[A-Z0-9_]*[A-Z0-9])\b/g,
    /(?:\benv:\s*|_ENV\s*=\s*)['"](KLEA_[A-Z0-9_]*[A-Z0-9])['"]/g,
    /\$\$?\{?(KLEA_[A-Z0-9_]*[A-Z0-9])\b/g,
  ];
  const code = tracked().filter(
    (f) =>
      !f.startsWith('test/') &&
      !f.startsWith('web/vendor/') &&
      (/\.(ts|mjs|js|sh|ya?ml)$/.test(f) || ['Makefile', 'Dockerfile', '.ci/run'].includes(f))
  );
  for (const file of code) {
    const text = read(file);
    for (const re of reads) for (const m of text.matchAll(re)) if (!found.has(m[1])) found.set(m[1], file);
  }
  return found;
}

/** Every key path of a zod object schema, records and lists as leaves (`mcp.servers`, `tools.sandbox.memory_mb`). */
function keyPaths(schema: z.ZodType, prefix = ''): string[] {
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
  switch (def.type) {
    case 'object':
      return Object.entries(def.shape as Record<string, z.ZodType>).flatMap(([key, value]) => {
        const here = prefix ? `${prefix}.${key}` : key;
        const below = keyPaths(value, here);
        return below.length ? below : [here];
      });
    case 'default':
    case 'prefault':
    case 'optional':
    case 'nullable':
      return keyPaths(def.innerType as z.ZodType, prefix);
    case 'pipe':
      return keyPaths(def.in as z.ZodType, prefix);
    default:
      return [];
  }
}

/** Every route the API serves (with a payload key, so the codec's routes are among them), as `METHOD /path/:id`. */
async function apiRoutes(): Promise<string[]> {
  const client = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
  const key = `k1:${Buffer.alloc(32, 7).toString('base64')}`;
  const app = createApp({ client, config: resolveConfig({}, { KLEA_PAYLOAD_KEY: key }) });
  const doc = (await request(app).get('/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
  await client.connection.close();
  return Object.entries(doc.paths).flatMap(([p, ops]) =>
    Object.keys(ops)
      .filter((m) => ['get', 'post', 'patch', 'put', 'delete'].includes(m))
      .map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`)
  );
}

/**
 * Whether `text` names a route as `METHOD /path` (spaces may align the path; a query string, a body or the end of
 * the entry may follow it), after `before` (a backtick for a table's code span).
 */
function namesRoute(text: string, route: string, before = ''): boolean {
  const [method, routePath] = route.split(' ');
  const escape = (x: string) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`${escape(before)}${method}\\s+${escape(routePath)}(?=[\`?\\s,])`).test(text);
}

describe('the reference pages name everything the code has', () => {
  it('docs/configuration.md names every environment variable Klea reads', () => {
    const config = read('docs/configuration.md');
    const variables = variablesRead();
    expect(variables.size).toBeGreaterThan(20);
    for (const { env } of ENV_OVERRIDES) variables.set(env, 'common/config-resolve.ts');
    const missing = [...variables].filter(([name]) => !new RegExp(`\`${name}\``).test(config));
    expect(missing.map(([name, file]) => `${name} (read in ${file})`)).toEqual([]);
  });

  it('docs/configuration.md names every configuration key', () => {
    const config = read('docs/configuration.md');
    const keys = keyPaths(ConfigSchema);
    expect(keys).toEqual(expect.arrayContaining(['model.name', 'tools.sandbox.memory_mb', 'mcp.servers']));
    expect(keys.filter((key) => !config.includes(`\`${key}\``))).toEqual([]);
  });

  it("docs/api.md's route table and docs/architecture.md §8 name every API route", async () => {
    const routes = await apiRoutes();
    expect(routes).toEqual(expect.arrayContaining(['GET /tasks/:id', 'POST /tasks/:id/rewind', 'POST /codec/encode']));
    const api = read('docs/api.md');
    expect(routes.filter((r) => !namesRoute(api, r, '`'))).toEqual([]);
    const contract = section('docs/architecture.md', 8);
    expect(routes.filter((r) => !namesRoute(contract, r))).toEqual([]);
  });

  it('docs/changing-workflow-code.md names every recorded history of the replay suite', () => {
    const page = read('docs/changing-workflow-code.md');
    const scenarios = tracked()
      .filter((f) => f.startsWith('test/histories/') && f.endsWith('.history.pb'))
      .map((f) => path.basename(f).split('--')[0]);
    expect(scenarios.length).toBeGreaterThan(10);
    expect(scenarios.filter((s) => !page.includes(`\`${s}\``))).toEqual([]);
  });

  it("docs/architecture.md §2's code map has every top-level folder and every folder of workflows/ and activities/", () => {
    const map = section('docs/architecture.md', 2);
    const folders = (depth: number, under = '') =>
      [
        ...new Set(
          tracked()
            .filter((f) => f.startsWith(under) && f.split('/').length > depth + 1)
            .map((f) => f.split('/')[depth])
        ),
      ].filter((name) => !name.startsWith('.'));
    const top = folders(0);
    expect(top).toEqual(expect.arrayContaining(['workflows', 'activities', 'test']));
    expect(top.filter((folder) => !new RegExp(`^${folder}/`, 'm').test(map))).toEqual([]);
    const rooms = ['workflows', 'activities'].flatMap((parent) =>
      folders(1, `${parent}/`).map((room) => ({ parent, room }))
    );
    expect(rooms.length).toBeGreaterThan(5);
    expect(rooms.filter(({ room }) => !new RegExp(`\\b${room}/`).test(map))).toEqual([]);
  });
});
