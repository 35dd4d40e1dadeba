/** find_files and grep: finding files by name and by content. */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { globToRegExp } from '../../../common/glob';
import type { ToolContext } from '../context';
import { walk } from '../fs-ops';
import { grepWithTimeLimit } from '../grep-runner';
import type { GrepJob } from '../grep-worker';
import { text, ToolError } from '../tool-result';

export function registerSearchTools(server: McpServer, { limits, gate, handle }: ToolContext): void {
  server.registerTool(
    'find_files',
    {
      title: 'Find files by name',
      description:
        'Find files whose path matches a glob, e.g. "**/*.ts", "src/**/test_*.py", "*.md" (a pattern without "/" matches names at any depth). Skips .git and node_modules.',
      inputSchema: {
        pattern: z.string().min(1).describe('glob pattern, relative to path'),
        path: z.string().default('.').describe('directory to search in, relative to the project directory'),
        max_results: z.number().int().min(1).max(5000).default(limits.findResults),
      },
      annotations: { title: 'Find files', readOnlyHint: true, openWorldHint: false },
    },
    handle('find_files', async (a: { pattern: string; path: string; max_results: number }, meta) => {
      const g = await gate.allow(a.path, 'read', meta);
      const re = globToRegExp(a.pattern);
      const found: string[] = [];
      let more = false;
      for await (const { real, dirent } of walk(g.real, 64, gate.ownState)) {
        if (dirent.isDirectory()) continue;
        const r = path.relative(g.real, real).split(path.sep).join('/');
        if (!re.test(r)) continue;
        if (found.length >= a.max_results) {
          more = true;
          break;
        }
        found.push(r);
      }
      if (more) found.push(`[more than ${a.max_results} matches; narrow the pattern]`);
      return text(found.length ? found.join('\n') : `no files match ${a.pattern}`);
    })
  );

  server.registerTool(
    'grep',
    {
      title: 'Search file contents',
      description:
        'Search the files for a regular expression (JavaScript syntax). Returns "path:line: text" per match. Skips .git, node_modules, binary and very large files. ' +
        'A search that runs longer than a time limit is stopped with an error.',
      inputSchema: {
        pattern: z.string().min(1).describe('regular expression'),
        path: z.string().default('.').describe('file or directory to search, relative to the project directory'),
        glob: z.string().optional().describe('only search files matching this glob, e.g. "*.ts"'),
        ignore_case: z.boolean().default(false),
        max_results: z.number().int().min(1).max(2000).default(limits.grepResults),
      },
      annotations: { title: 'Search file contents', readOnlyHint: true, openWorldHint: false },
    },
    handle(
      'grep',
      async (
        a: { pattern: string; path: string; glob?: string; ignore_case: boolean; max_results: number },
        meta,
        signal
      ) => {
        try {
          new RegExp(a.pattern, a.ignore_case ? 'i' : '');
        } catch (err) {
          throw new ToolError(`invalid regular expression: ${(err as Error).message}`);
        }
        const g = await gate.allow(a.path, 'read', meta);
        const only = a.glob ? globToRegExp(a.glob) : null;
        const stat = await fs.stat(g.real);
        const files: string[] = [];
        if (stat.isDirectory()) {
          for await (const { real, dirent } of walk(g.real, 64, gate.ownState)) if (dirent.isFile()) files.push(real);
        } else files.push(g.real);
        const root = (await gate.root()).real;
        const chosen: GrepJob['files'] = [];
        for (const file of files) {
          const r = path.relative(root, file).split(path.sep).join('/');
          if (only && !only.test(r)) continue;
          // Sensitive files inside the project are skipped by a directory search, never read silently; so are
          // files with another name (hard link) that may be outside it.
          if (file !== g.real && gate.sensitive(r)) continue;
          const st = await fs.stat(file).catch(() => null);
          if (!st || st.size > limits.grepFileBytes || (file !== g.real && st.nlink > 1)) continue;
          chosen.push({ real: file, shown: r, class: file === g.real ? g.class : 'inside' });
        }
        const job: GrepJob = {
          pattern: a.pattern,
          flags: a.ignore_case ? 'i' : '',
          files: chosen,
          maxResults: a.max_results,
          maxLineChars: 300,
        };
        const { hits, more } = await grepWithTimeLimit(job, limits.grepTimeMs, signal);
        if (more) hits.push(`[more than ${a.max_results} matches; narrow the search]`);
        return text(hits.length ? hits.join('\n') : `no matches for /${a.pattern}/`);
      }
    )
  );
}
