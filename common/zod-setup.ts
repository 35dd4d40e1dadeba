/**
 * What lets workflow runs share zod schemas. A worker evaluates the modules it preloads once, before any run, and
 * the SDK then deep-freezes them, so that no run can change what another run sees (worker/bundle.ts).
 *
 * zod builds parts of a schema on first use. It stores them on the schema as own properties: a method bound to it
 * (`safeParse`) and internals such as an object's `propValues` or a union's discriminator map. A frozen schema
 * refuses that: "Cannot define property safeParse, object is not extensible". So, before the freeze,
 * {@link completeSchemas} reads every one of those lazily built members of every schema it can reach. A completed
 * schema parses without writing to itself, and it behaves the same frozen as not.
 *
 * Loading this module also builds and parses one schema. zod completes its global configuration (its default locale
 * and memoizer) on the first schema it builds; a worker that preloads zod alone would otherwise freeze it half done.
 */
import { z } from 'zod';

export const zodReady = z.object({ ready: z.literal(true) }).safeParse({ ready: true }).success;

const isObject = (v: unknown): v is object => (typeof v === 'object' && v !== null) || typeof v === 'function';

/** Reads every accessor that `target`'s prototypes define: zod's lazy members build and store themselves. */
function readLazyMembers(target: object): void {
  for (let proto = Object.getPrototypeOf(target); proto && proto !== Object.prototype;) {
    for (const key of Reflect.ownKeys(proto)) {
      const desc = Object.getOwnPropertyDescriptor(proto, key);
      if (!desc?.get || Object.prototype.hasOwnProperty.call(target, key)) continue;
      try {
        void (target as Record<PropertyKey, unknown>)[key];
      } catch {
        // A member that cannot be built for this schema (zod throws, say, for `shape` of a non-object) is built by
        // nothing else either: parsing never asks for it.
      }
    }
    proto = Object.getPrototypeOf(proto);
  }
}

/**
 * Runs a schema's parser on a value it refuses. zod's memoizer wraps each parser and, on its first call (its second,
 * for a schema whose recursion it cannot yet prove), decides whether the schema can recurse and swaps the plain
 * parser back in if not. Each schema is run here on its own, nested or not.
 */
function runOnce(internals: object): void {
  const run = (internals as { run?: unknown }).run;
  if (typeof run !== 'function') return; // a check, not a schema
  for (let i = 0; i < 2; i++) {
    try {
      run.call(internals, { value: NOT_DATA, issues: [] }, { async: false });
    } catch {
      // only what it stores on the way matters
    }
  }
}

/** A value no Klea schema accepts. */
const NOT_DATA = Symbol('not data');

/**
 * A regular expression that a frozen check can still use. zod sets `lastIndex = 0` before every test (`.regex()`,
 * string formats), and a frozen RegExp refuses the write. This stand-in passes it on to its RegExp, which it keeps in
 * a private field, out of the freeze's reach; the reset before each test keeps one run's position from mattering to
 * the next.
 */
class ShareablePattern {
  readonly #re: RegExp;
  constructor(re: RegExp) {
    // Its own copy: the schema may hold the original elsewhere too (a format's `_zod.pattern`), where it is frozen.
    this.#re = new RegExp(re.source, re.flags);
  }
  get lastIndex(): number {
    return this.#re.lastIndex;
  }
  set lastIndex(n: number) {
    this.#re.lastIndex = n;
  }
  get source(): string {
    return this.#re.source;
  }
  get flags(): string {
    return this.#re.flags;
  }
  test(text: string): boolean {
    return this.#re.test(text);
  }
  exec(text: string): RegExpExecArray | null {
    return this.#re.exec(text);
  }
  toString(): string {
    return this.#re.toString();
  }
}

const isRegExp = (v: unknown): v is RegExp => Object.prototype.toString.call(v) === '[object RegExp]';

/** A check's pattern, made shareable (the check reads `def.pattern` on every call). */
function shareablePattern(internals: object): void {
  const def = (internals as { def?: { pattern?: unknown } }).def;
  if (def && isRegExp(def.pattern)) def.pattern = new ShareablePattern(def.pattern);
}

/** zod schemas and checks carry their internals under `_zod`; everything else is plain data or a function. */
const isZodPart = (v: object): v is { _zod: object } => '_zod' in v && isObject((v as { _zod: unknown })._zod);

function complete(value: unknown, seen: WeakSet<object>): void {
  if (!isObject(value) || typeof value === 'function' || seen.has(value)) return;
  seen.add(value);
  const parts: object[] = [value];
  if (isZodPart(value)) {
    readLazyMembers(value);
    readLazyMembers(value._zod);
    runOnce(value._zod);
    shareablePattern(value._zod);
    parts.push(value._zod);
  } else if (!Array.isArray(value) && !isPlainObject(value)) {
    return; // not a schema, nor data that holds schemas (a Set, a RegExp, a class instance)
  }
  // Everything they hold: an object's shape, a union's options, an array's element, a check's definition, and the
  // values the lazy members just built.
  for (const part of parts) {
    for (const key of Reflect.ownKeys(part)) {
      const desc = Object.getOwnPropertyDescriptor(part, key);
      if (desc && 'value' in desc) complete(desc.value, seen);
      else if (desc?.get) {
        try {
          complete(desc.get.call(part), seen);
        } catch {
          // see readLazyMembers
        }
      }
    }
  }
}

/** An object literal, a module's exports or a null-prototype object, from any realm. */
function isPlainObject(v: object): boolean {
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/**
 * Completes every zod schema reachable from `roots` (modules' exports, objects and arrays that hold schemas): after
 * this, parsing with them writes nothing to them. Call it before the SDK freezes the preloaded modules.
 */
export function completeSchemas(roots: readonly unknown[]): void {
  // Twice: in a recursive schema, zod drops a member it built while the recursion was still open and builds it
  // again on the next read, once the rest of the graph is complete.
  for (let pass = 0; pass < 2; pass++) {
    const seen = new WeakSet<object>();
    for (const root of roots) complete(root, seen);
  }
}
