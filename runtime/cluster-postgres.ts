/**
 * PostgreSQL's programs for the Temporal cluster on this machine (runtime/cluster.ts): where Debian installed them,
 * and how they run when Klea runs as root.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

/** PostgreSQL's programs: KLEA_PG_BIN, else the newest of Debian's /usr/lib/postgresql/<version>/bin. */
export function postgresBinDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KLEA_PG_BIN) return env.KLEA_PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(path.join(root, v, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions.length)
    throw new Error('PostgreSQL is not installed (Debian package postgresql; make cluster installs it)');
  return path.join(root, versions[0]!, 'bin');
}

/**
 * PostgreSQL refuses to run as root: as root it runs in a user namespace of its own as an unprivileged user that
 * owns the data directory there (its files stay root's outside), so nothing else on the machine is touched.
 */
export function unprivileged(file: string, args: string[]): { file: string; args: string[] } {
  if (process.getuid?.() !== 0) return { file, args };
  return { file: 'unshare', args: ['--user', '--map-user=1000', '--map-group=1000', '--', file, ...args] };
}
