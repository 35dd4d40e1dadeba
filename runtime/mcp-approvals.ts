/**
 * The user's approval of each MCP server the worker starts from its configuration (`mcp.servers`, the shapes other
 * clients' configs drop in as): a server that runs a program starts only once the user approved its full command
 * line, environment and working directory, and the programs and files they name as they are now; a change to any of
 * them (an edit of klea.yaml or of its envFile, a checkout, a command that rewrites the script it runs) asks again.
 *
 * What the worker could not start waits in `pending`, with everything the user needs to judge it; `klea mcp approve
 * <name>` moves it to `approved`. Both live in Klea's data directory (`mcp-approvals.json`): Klea's own state, which
 * no tool reaches and no command sees.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { dataDir } from './data-dir';

/** What a configured server runs, as the worker would start it. */
export interface ServerLaunch {
  name: string;
  command: string;
  args: readonly string[];
  /** The variables its configuration sets (`env`, `envFile`), expanded; the worker's own PATH, HOME... are not. */
  env: Readonly<Record<string, string>>;
  /** Its working directory (absolute); the worker's when the configuration names none. */
  cwd: string;
  /** The PATH the command is looked up in. */
  path: string;
}

/** A file the command line names (the program, a script), with its content's hash when it could be read. */
const FileSchema = z.object({ path: z.string(), sha256: z.string().nullable() });

const LaunchShownSchema = z.object({
  command: z.string(),
  args: z.array(z.string()),
  cwd: z.string(),
  /** Each variable, its value shown unless its name says it is a secret. */
  env: z.record(z.string(), z.string()),
  files: z.array(FileSchema),
});
export type LaunchShown = z.infer<typeof LaunchShownSchema>;

const ApprovalsSchema = z.object({
  approved: z.record(z.string(), z.object({ fingerprint: z.string(), at: z.string() })).default({}),
  pending: z
    .record(
      z.string(),
      z.object({ fingerprint: z.string(), at: z.string(), changed: z.boolean(), launch: LaunchShownSchema })
    )
    .default({}),
});
export type Approvals = z.infer<typeof ApprovalsSchema>;

/** Where the approvals are kept. */
export const approvalsFile = (env: NodeJS.ProcessEnv = process.env) => path.join(dataDir(env), 'mcp-approvals.json');

/** Files larger than this are known by their size and time, not their content. */
const MAX_HASHED = 64 * 1024 * 1024;
const SECRET_NAME = /(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIAL|AUTH|COOKIE|SESSION|PAT)S?$/i;

/** Hashes already taken, by what the file was (a change of content changes its size, times or inode). */
const hashes = new Map<string, string>();

/** The content hash of a regular file (never through a final symlink's own name: the file it leads to). */
function fileHash(file: string): string | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return null;
    if (st.size > MAX_HASHED) return `size ${st.size}, modified ${st.mtimeMs}`;
    const known = `${file}:${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    const cached = hashes.get(known);
    if (cached) return cached;
    const hash = createHash('sha256');
    const buf = Buffer.alloc(1024 * 1024);
    for (let at = 0; ;) {
      const n = readSync(fd, buf, 0, buf.length, at);
      if (n <= 0) break;
      hash.update(buf.subarray(0, n));
      at += n;
    }
    const digest = hash.digest('hex');
    if (hashes.size > 256) hashes.clear();
    // A file changed a moment ago may change again within the file system's clock tick, with the same stat: only
    // one that has been still for a while is remembered.
    if (Date.now() - Math.max(st.mtimeMs, st.ctimeMs) > 2000) hashes.set(known, digest);
    return digest;
  } finally {
    closeSync(fd);
  }
}

const isFile = (p: string) => {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

/** The program a command names: looked up in PATH unless it holds a slash (then against the working directory). */
function programOf(launch: ServerLaunch): string | null {
  if (launch.command.includes('/')) {
    const p = path.resolve(launch.cwd, launch.command);
    return isFile(p) ? p : null;
  }
  for (const dir of launch.path.split(':').filter(Boolean)) {
    const p = path.resolve(launch.cwd, dir, launch.command);
    if (isFile(p)) return p;
  }
  return null;
}

/**
 * Everything the approval covers, and its fingerprint: the command line, the variables and the working directory as
 * written and expanded, and the content of the program and of every argument that names a file (a script in the
 * project that a command could rewrite).
 */
export function describeLaunch(launch: ServerLaunch): { fingerprint: string; shown: LaunchShown } {
  const files: Array<z.infer<typeof FileSchema>> = [];
  const program = programOf(launch);
  if (program) files.push({ path: program, sha256: fileHash(program) });
  for (const arg of launch.args) {
    if (!arg || arg.startsWith('-')) continue;
    const p = path.resolve(launch.cwd, arg);
    if (p !== program && isFile(p)) files.push({ path: p, sha256: fileHash(p) });
  }
  const env = Object.fromEntries(Object.entries(launch.env).sort(([a], [b]) => a.localeCompare(b)));
  const exact = { command: launch.command, args: launch.args, cwd: launch.cwd, env, program, files };
  const fingerprint = createHash('sha256').update(JSON.stringify(exact)).digest('hex');
  const shownEnv = Object.fromEntries(
    Object.entries(env).map(([k, v]) => [k, SECRET_NAME.test(k) ? `(set, ${v.length} characters, not shown)` : v])
  );
  return {
    fingerprint,
    shown: { command: launch.command, args: [...launch.args], cwd: launch.cwd, env: shownEnv, files },
  };
}

export function readApprovals(env: NodeJS.ProcessEnv = process.env): Approvals {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(approvalsFile(env), 'utf8'));
  } catch {
    return { approved: {}, pending: {} };
  }
  const parsed = ApprovalsSchema.safeParse(raw);
  // A file that does not read as approvals approves nothing.
  return parsed.success ? parsed.data : { approved: {}, pending: {} };
}

function writeApprovals(doc: Approvals, env: NodeJS.ProcessEnv = process.env): void {
  const file = approvalsFile(env);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

export type ApprovalVerdict = { approved: true } | { approved: false; changed: boolean; fingerprint: string };

/**
 * Whether the user approved this launch as it is now. When not, it is kept as pending (what `klea mcp approve`
 * shows), and the verdict says whether an earlier approval of the server no longer holds.
 */
export function approvalOf(launch: ServerLaunch, env: NodeJS.ProcessEnv = process.env): ApprovalVerdict {
  const { fingerprint, shown } = describeLaunch(launch);
  const doc = readApprovals(env);
  const approved = doc.approved[launch.name];
  if (approved?.fingerprint === fingerprint) return { approved: true };
  const changed = approved !== undefined;
  if (doc.pending[launch.name]?.fingerprint !== fingerprint) {
    doc.pending[launch.name] = { fingerprint, at: new Date().toISOString(), changed, launch: shown };
    writeApprovals(doc, env);
  }
  return { approved: false, changed, fingerprint };
}

/**
 * Approves a pending server, as `klea mcp approve` does once the user has seen it: the launch it was shown, by its
 * fingerprint (a launch that changed since is not approved by it).
 */
export function approve(name: string, fingerprint: string, env: NodeJS.ProcessEnv = process.env): void {
  const doc = readApprovals(env);
  const pending = doc.pending[name];
  if (!pending) throw new Error(`no MCP server named "${name}" waits for approval`);
  if (pending.fingerprint !== fingerprint)
    throw new Error(`what "${name}" runs changed while it was shown: look at it again`);
  doc.approved[name] = { fingerprint, at: new Date().toISOString() };
  delete doc.pending[name];
  writeApprovals(doc, env);
}

/** Withdraws an approval: the server asks again before it next starts. */
export function revoke(name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const doc = readApprovals(env);
  if (!doc.approved[name]) return false;
  delete doc.approved[name];
  writeApprovals(doc, env);
  return true;
}
