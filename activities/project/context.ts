/**
 * Project context: AGENTS.md, else CLAUDE.md, from the project directory. Read once and re-read only when its
 * modification time changes, so editing it takes effect on the next prompt without restarting anything.
 */
import fs from 'node:fs';
import path from 'node:path';

export const CONTEXT_FILES = ['AGENTS.md', 'CLAUDE.md'] as const;
export const CONTEXT_CAP_CHARS = 32_000;

export interface ProjectContext {
  file: string | null;
  text: string;
}

interface Cached {
  file: string;
  mtimeMs: number;
  size: number;
  text: string;
}

export class ProjectContextReader {
  private readonly cache = new Map<string, Cached>();

  /** Synchronous, as the path checks are (runtime/path-resolve.ts): a stat and, rarely, a read of a small file. */
  read(projectDir: string): ProjectContext {
    for (const name of CONTEXT_FILES) {
      const file = path.join(projectDir, name);
      let stat;
      try {
        stat = fs.statSync(file, { throwIfNoEntry: false });
      } catch {
        continue;
      }
      if (!stat?.isFile()) continue;
      const hit = this.cache.get(projectDir);
      if (hit && hit.file === file && hit.mtimeMs === stat.mtimeMs && hit.size === stat.size)
        return { file: name, text: hit.text };
      let text = fs.readFileSync(file, 'utf8');
      if (text.length > CONTEXT_CAP_CHARS)
        text = `${text.slice(0, CONTEXT_CAP_CHARS)}\n[${name} is longer; the rest is not shown]`;
      this.cache.set(projectDir, { file, mtimeMs: stat.mtimeMs, size: stat.size, text });
      return { file: name, text };
    }
    this.cache.delete(projectDir);
    return { file: null, text: '' };
  }
}
