/** A directory tree as one comparable value: every path with its kind, mode and content (tests of checkpoints). */
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';

/**
 * Every path under `root` (but the names in `skip`), sorted: `dir 755`, `link -> target`, or `file 644 <content>`
 * (content as text; binary content as base64).
 */
export function listTree(root: string, skip: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, rel: string) => {
    for (const name of readdirSync(dir).sort()) {
      if (skip.includes(name)) continue;
      const abs = path.join(dir, name);
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(abs);
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isSymbolicLink()) out[r] = `link -> ${readlinkSync(abs)}`;
      else if (st.isDirectory()) {
        out[r] = `dir ${mode}`;
        walk(abs, r);
      } else {
        const data = readFileSync(abs);
        const text = data.toString('utf8');
        out[r] = `file ${mode} ${Buffer.from(text, 'utf8').equals(data) ? text : data.toString('base64')}`;
      }
    }
  };
  walk(root, '');
  return out;
}

/** Every file under `dir` whose bytes contain `needle`. */
export function filesContaining(dir: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const name of names) {
      const abs = path.join(d, name);
      const st = lstatSync(abs);
      if (st.isDirectory()) walk(abs);
      else if (st.isFile() && readFileSync(abs).includes(needle)) found.push(abs);
    }
  };
  walk(dir);
  return found;
}
