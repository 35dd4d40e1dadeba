/**
 * Every workflow run shares the workflow modules and the common/ modules they import (workflows/shared/preload.ts);
 * the worker freezes them before the first run. These tests hold what that relies on: the preload names every
 * common/ module a workflow imports, and a completed schema parses, frozen, exactly as a fresh one does.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { z as Zod } from 'zod';
import { completeSchemas } from '../../common/zod-setup';
import type * as Preload from '../../workflows/shared/preload';

const ROOT = path.resolve(__dirname, '..', '..');

/** The value imports (not `import type`) of `file`, followed from workflows/index.ts, as repository paths. */
function reachableFrom(entry: string): Set<string> {
  const seen = new Set<string>();
  const queue = [path.join(ROOT, entry)];
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = fs.readFileSync(file, 'utf8');
    for (const m of source.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?'(\.[^']+)'/gm)) {
      if (m[1]) continue;
      const base = path.resolve(path.dirname(file), m[2]);
      const found = [`${base}.ts`, path.join(base, 'index.ts')].find((f) => fs.existsSync(f));
      if (found) queue.push(found);
    }
  }
  return new Set([...seen].map((f) => path.relative(ROOT, f)));
}

/** The SDK's freeze of preloaded modules: own properties of objects, recursively; functions frozen, not walked. */
function deepFreeze(value: unknown, seen = new WeakSet<object>()): void {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value)) return;
  seen.add(value);
  if (Object.isFrozen(value)) return;
  if (typeof value === 'object') {
    for (const key of Reflect.ownKeys(value)) {
      try {
        deepFreeze((value as Record<PropertyKey, unknown>)[key], seen);
      } catch {
        // as the SDK: some objects cannot be frozen
      }
    }
  }
  Object.freeze(value);
}

type Schema = { _zod: { run: unknown; values?: Set<unknown> }; safeParse(v: unknown): unknown };
const isSchema = (v: unknown): v is Schema =>
  typeof v === 'object' && v !== null && '_zod' in v && typeof (v as Schema)._zod.run === 'function';

/** Every schema reachable from `roots`, in a stable order (the same for two copies of the same modules). */
function schemasIn(roots: readonly unknown[]): Schema[] {
  const found: Schema[] = [];
  const seen = new Set<unknown>();
  const walk = (v: unknown) => {
    if (v === null || typeof v !== 'object' || seen.has(v)) return;
    seen.add(v);
    if (isSchema(v)) found.push(v);
    const proto: unknown = Object.getPrototypeOf(v);
    const plain = proto === null || Object.getPrototypeOf(proto) === null;
    if (!isSchema(v) && !Array.isArray(v) && !plain) return;
    const parts = isSchema(v) ? [v, v._zod, (v._zod as { def?: unknown }).def] : [v];
    for (const part of parts) {
      if (part === null || typeof part !== 'object') continue;
      for (const key of Reflect.ownKeys(part)) {
        const desc = Object.getOwnPropertyDescriptor(part, key);
        if (desc && 'value' in desc) walk(desc.value);
      }
    }
  };
  roots.forEach(walk);
  return found;
}

/** Values of every kind, and the ones a schema names (its enum options, its literal). */
const GENERIC: unknown[] = [
  undefined,
  null,
  0,
  1,
  -1,
  2.5,
  '',
  'x',
  'a/b.txt',
  '../etc/passwd',
  true,
  [],
  ['x'],
  [{}],
  {},
  { id: 's1', path: 'a.txt', text: 'x' },
  { kind: 'message', text: 'hi', seq: 1 },
  { decision: 'approve' },
];
const corpus = (s: Schema) => [...GENERIC, ...(s._zod.values ?? [])];

/** What a parse gives, as data (issues in zod's words), or the error it threw. */
function outcome(s: Schema, v: unknown): string {
  try {
    const r = s.safeParse(v) as { success: boolean; data?: unknown; error?: { issues: unknown } };
    return JSON.stringify(r.success ? { data: r.data } : { issues: r.error!.issues });
  } catch (err) {
    return `threw ${String(err)}`;
  }
}

type PreloadModule = typeof Preload;
const loadPreload = (): PreloadModule => {
  let m!: PreloadModule;
  jest.isolateModules(() => {
    m = jest.requireActual<PreloadModule>('../../workflows/shared/preload');
  });
  return m;
};

describe('modules every workflow run shares', () => {
  test('the preload names every common/ module a workflow imports, so each one is completed before the freeze', () => {
    const imported = [...reachableFrom('workflows/index.ts')]
      .filter((f) => f.startsWith('common/'))
      .map((f) => path.basename(f, '.ts'))
      .sort();
    const preload = loadPreload();
    expect(Object.keys(preload.SHARED_COMMON_MODULES).sort()).toEqual(imported);
  });

  test('a completed schema, frozen, parses every value exactly as a fresh one does (it writes nothing to itself)', () => {
    // Arrange: two copies of the same modules; the first is completed (by loading the preload) and frozen.
    const shared = loadPreload();
    deepFreeze(shared.SHARED_COMMON_MODULES);
    const fresh = loadPreload();
    const frozenSchemas = schemasIn(Object.values(shared.SHARED_COMMON_MODULES));
    const freshSchemas = schemasIn(Object.values(fresh.SHARED_COMMON_MODULES));
    expect(frozenSchemas.length).toBeGreaterThan(50);
    expect(freshSchemas.length).toBe(frozenSchemas.length);

    // Act + Assert: every schema, nested ones included, on values of every kind.
    const differences: string[] = [];
    frozenSchemas.forEach((s, i) => {
      expect(Object.isFrozen(s)).toBe(true);
      for (const v of corpus(s)) {
        const got = outcome(s, v);
        const want = outcome(freshSchemas[i], v);
        if (got !== want) differences.push(`schema #${i} on ${String(v)}: ${got} ≠ ${want}`);
      }
    });
    expect(differences).toEqual([]);
  });

  test('a schema that was not completed is what the freeze would break (the check above can fail)', () => {
    const { z } = jest.requireActual<{ z: typeof Zod }>('zod');
    const incomplete = z.object({ a: z.string() });
    const completed = z.object({ a: z.string() });
    completeSchemas([completed]);
    deepFreeze([incomplete, completed]);
    expect(() => incomplete.safeParse({ a: 'x' })).toThrow(/not extensible|read only/);
    expect(completed.safeParse({ a: 'x' })).toEqual({ success: true, data: { a: 'x' } });
  });

  test('string formats and recursive schemas parse frozen once completed', () => {
    const { z } = jest.requireActual<{ z: typeof Zod }>('zod');
    const Contact = z.object({ email: z.email(), id: z.uuid() });
    interface Node {
      name: string;
      children: Node[];
    }
    const NodeSchema: Zod.ZodType<Node> = z.object({
      name: z.string().regex(/^[a-z]+$/),
      get children() {
        return z.array(NodeSchema);
      },
    });
    completeSchemas([Contact, NodeSchema]);
    deepFreeze([Contact, NodeSchema]);

    const contact = { email: 'a@example.org', id: '5d1b6e2c-3f4a-4b5c-8d9e-0f1a2b3c4d5e' };
    expect(Contact.safeParse(contact)).toEqual({ success: true, data: contact });
    expect(Contact.safeParse({ email: 'nope', id: 'x' }).success).toBe(false);
    const tree = { name: 'root', children: [{ name: 'leaf', children: [] }] };
    expect(NodeSchema.safeParse(tree)).toEqual({ success: true, data: tree });
    expect(NodeSchema.safeParse({ name: 'root', children: [{ name: 'Bad', children: [] }] }).success).toBe(false);
  });
});
