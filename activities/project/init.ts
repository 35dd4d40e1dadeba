/**
 * `/init`: looks at the project through the workspace server's read-only tools, has the `init_project` node write
 * the guidance, and writes AGENTS.md through the workspace server (so the write is confined and audited).
 */
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { Config } from '../../common/config';
import { Failure } from '../../common/failures';
import type { ModelUsage } from '../../common/model-protocol';
import { resolvePath } from '../../runtime/path-resolve';
import type { ModelClient } from '../llm/model';
import { initProjectText } from '../llm/nodes';
import type { CallToolInput, createToolActivities } from '../mcp/tools';
import { requireAllowedProject } from './allowed';

/** Files that tell what a project is and how it is built and tested. */
const INIT_FILES = [
  'README.md',
  'package.json',
  'Makefile',
  'pyproject.toml',
  'setup.py',
  'requirements.txt',
  'Cargo.toml',
  'go.mod',
  'pom.xml',
  'build.gradle',
  'CONTRIBUTING.md',
  'tsconfig.json',
  'justfile',
];

export async function initProject(
  deps: { config: Config; model: ModelClient; tools: Pick<ReturnType<typeof createToolActivities>, 'callTool'> },
  input: { projectDir: string }
): Promise<{ path: string; bytes: number; usage: ModelUsage }> {
  const call = (tool: string, args: Record<string, unknown>, more: Pick<CallToolInput, 'grants' | 'replace'> = {}) =>
    deps.tools.callTool({ projectDir: input.projectDir, toolAccess: 'full', server: 'workspace', tool, args, ...more });
  requireAllowedProject(deps.config, input.projectDir);
  const listing = await call('list_dir', { path: '.', depth: 2 });
  const parts = [`## Files (two levels)\n${listing.text}`];
  for (const name of INIT_FILES) {
    const r = await call('read_file', { path: name, end_line: 150 });
    if (r.status === 'ok') parts.push(`## ${name}\n${r.text.slice(0, 6000)}`);
  }
  const { text, usage } = await initProjectText(deps.model, parts.join('\n\n'));
  // AGENTS.md is protected (every later plan reads it): the user's own `/init` is the decision to write it, and
  // to replace the one there is (a write that keeps little of a file is refused otherwise).
  const agentsMd =
    resolvePath(path.join(input.projectDir, 'AGENTS.md')).real ?? path.join(input.projectDir, 'AGENTS.md');
  const written = await call(
    'write_file',
    { path: 'AGENTS.md', content: text.trim() + '\n' },
    { grants: [{ path: agentsMd, op: 'write' }], replace: true }
  );
  if (written.status !== 'ok')
    throw ApplicationFailure.nonRetryable(`could not write AGENTS.md: ${written.text}`, Failure.InitWriteFailed);
  return { path: 'AGENTS.md', bytes: Buffer.byteLength(text), usage };
}
