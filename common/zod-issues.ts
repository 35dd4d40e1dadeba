/**
 * The one way a zod error becomes words for people: each issue as `{path, message}`, the path dotted. Callers
 * word a few things their own way, and their messages are part of what users and tests read, so those are
 * options rather than separate formatters: the API says "unknown field" per field, the config loader
 * "unknown key" per object, a workflow message keeps zod's own words.
 */
import type { z } from 'zod';

export interface IssueDescription {
  /** Dotted path to the bad value, e.g. `body.decision` or `mcp.servers.s`. */
  path: string;
  message: string;
}

export interface DescribeIssuesOptions {
  /** Keys in front of each issue's own path (the API's `body`, `query` or `path`). */
  prefix?: readonly string[];
  /** The path of an issue about the value itself (no path of its own), e.g. `input` or `(top level)`. */
  whole?: string;
  /**
   * Unknown keys: `zod` keeps zod's one message for them all; `per_field` gives each its own entry, the key ending
   * the path, saying `unknown field`; `grouped` says `unknown key "a"` (or `unknown keys "a", "b"`).
   */
  unknownKeys?: 'zod' | 'per_field' | 'grouped';
  /** A bad record key (a server's name): zod says only "Invalid key in record"; `explain` says why it is bad. */
  recordKeys?: 'zod' | 'explain';
}

export function describeZodIssues(error: z.ZodError, opts: DescribeIssuesOptions = {}): IssueDescription[] {
  const { prefix = [], whole = '', unknownKeys = 'zod', recordKeys = 'zod' } = opts;
  const pathOf = (keys: readonly PropertyKey[]) => [...prefix, ...keys.map(String)].join('.') || whole;
  return error.issues.flatMap((issue): IssueDescription[] => {
    if (issue.code === 'unrecognized_keys' && unknownKeys === 'per_field') {
      // An empty key names no field, so its path stops at the object that holds it.
      return issue.keys.map((key) => ({
        path: pathOf(key ? [...issue.path, key] : issue.path),
        message: 'unknown field',
      }));
    }
    let message = issue.message;
    if (issue.code === 'unrecognized_keys' && unknownKeys === 'grouped') {
      message = `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
    } else if (issue.code === 'invalid_key' && recordKeys === 'explain') {
      message = `bad name: ${issue.issues.map((i) => i.message).join('; ')}`;
    }
    return [{ path: pathOf(issue.path), message }];
  });
}

/** `path: message` for each issue, joined by `separator`. */
export function formatZodIssues(error: z.ZodError, opts: DescribeIssuesOptions & { separator?: string } = {}): string {
  return describeZodIssues(error, opts)
    .map((d) => `${d.path}: ${d.message}`)
    .join(opts.separator ?? '; ');
}
