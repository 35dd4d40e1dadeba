/** read_file and list_dir: looking at one file or one directory. */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { ToolContext } from '../context';
import { inCheckedDir, readText, walk } from '../fs-ops';
import { text, ToolError } from '../tool-result';

export function registerReadTools(server: McpServer, { limits, gate, handle }: ToolContext): void {
  server.registerTool(
    'read_file',
    {
      title: 'Read a file',
      description:
        'Read a text file in the project. Returns its lines (optionally a range). Large files are cut at a size cap with a marker ' +
        'telling which lines were shown and how to read on.',
      inputSchema: {
        path: z.string().describe('file path, relative to the project directory'),
        start_line: z.number().int().min(1).optional().describe('first line to return (1-based)'),
        end_line: z.number().int().min(1).optional().describe('last line to return (inclusive)'),
      },
      annotations: { title: 'Read a file', readOnlyHint: true, openWorldHint: false },
    },
    handle('read_file', async (a: { path: string; start_line?: number; end_line?: number }, meta) => {
      const g = await gate.allow(a.path, 'read', meta);
      const { buf } = await readText(g, gate.rel);
      if (buf.subarray(0, 8192).includes(0)) return text(`${a.path} is a binary file (${buf.length} bytes); not shown`);
      const lines = buf.toString('utf8').split('\n');
      if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
      const start = a.start_line ?? 1;
      const end = Math.min(a.end_line ?? lines.length, lines.length);
      if (a.end_line !== undefined && a.end_line < start) throw new ToolError('end_line must not be before start_line');
      if (start > Math.max(lines.length, 1))
        throw new ToolError(`start_line ${start} is past the end (${lines.length} lines)`);
      const out: string[] = [];
      let bytes = 0;
      let last = start - 1;
      for (let i = start; i <= end; i++) {
        const line = lines[i - 1];
        bytes += Buffer.byteLength(line) + 1;
        if (bytes > limits.readBytes && out.length > 0) break;
        out.push(line);
        last = i;
      }
      let body = out.join('\n');
      if (last < end)
        body += `\n[truncated: showing lines ${start}-${last} of ${lines.length} (size cap ${limits.readBytes} bytes); read on with start_line=${last + 1}]`;
      return text(body, {
        path: await gate.rel(g.real),
        start_line: start,
        end_line: last,
        total_lines: lines.length,
        truncated: last < end,
      });
    })
  );

  server.registerTool(
    'list_dir',
    {
      title: 'List a directory',
      description:
        'List the entries of a directory in the project: directories end with "/", symlinks show their target. depth > 1 lists subdirectories too (not .git or node_modules).',
      inputSchema: {
        path: z.string().default('.').describe('directory path, relative to the project directory'),
        depth: z.number().int().min(1).max(5).default(1).describe('how many levels to list'),
      },
      annotations: { title: 'List a directory', readOnlyHint: true, openWorldHint: false },
    },
    handle('list_dir', async (a: { path: string; depth: number }, meta) => {
      // An empty path is the project itself, as its default "." is (a model may send "" for "here").
      if (!a.path.trim()) a = { ...a, path: '.' };
      const g = await gate.allow(a.path, 'read', meta);
      const stat = await fs.stat(g.real);
      if (!stat.isDirectory()) throw new ToolError(`${a.path} is not a directory`);
      const lines: string[] = [];
      let truncated = false;
      for await (const { real, dirent } of walk(g.real, a.depth - 1, gate.ownState)) {
        if (lines.length >= limits.listEntries) {
          truncated = true;
          break;
        }
        const name = path.relative(g.real, real);
        if (dirent.isSymbolicLink())
          lines.push(
            `${name} -> ${await inCheckedDir(path.dirname(real), (dir) => fs.readlink(path.join(dir, path.basename(real))))}`
          );
        else if (dirent.isDirectory()) lines.push(`${name}/`);
        else lines.push(name);
      }
      if (truncated) lines.push(`[truncated at ${limits.listEntries} entries]`);
      return text(lines.length ? lines.join('\n') : '(empty directory)');
    })
  );
}
