/** Where the installation lives: the nearest directory up from this file whose package.json is Klea's. */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const REPO_ROOT = findRepoRoot(__dirname);

function findRepoRoot(from: string): string {
  let dir = from;
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'klea') return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
}
