import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildWorkflowBundle } from '../../worker/bundle';

const root = path.join(__dirname, '..', '..');
const BAD =
  "import { readFileSync } from 'fs';\nexport async function probeWorkflow() { return readFileSync('/etc/hostname', 'utf8'); }\n";

/** Lints text as if it were the given file, with the project's real ESLint config (the sandbox rule needs no types). */
function lintAs(file: string, text: string): string[] {
  let out: string;
  try {
    out = execFileSync(
      process.execPath,
      [
        path.join(root, 'node_modules/eslint/bin/eslint.js'),
        '--stdin',
        '--stdin-filename',
        file,
        '--parser-options',
        'projectService:false',
        '--rule',
        '@typescript-eslint/no-floating-promises: off',
        '--rule',
        '@typescript-eslint/no-misused-promises: off',
        '--format',
        'json',
      ],
      { cwd: root, input: text, encoding: 'utf8' }
    );
  } catch (err) {
    out = (err as { stdout: string }).stdout; // exit code 1 when there are errors
  }
  const [result] = JSON.parse(out) as Array<{ messages: Array<{ ruleId: string }> }>;
  return result.messages.map((m) => m.ruleId);
}

describe('the workflow sandbox rule', () => {
  it('lint rejects a Node built-in imported under workflows/ and common/', () => {
    expect(lintAs('workflows/probe/workflow.ts', BAD)).toContain('@typescript-eslint/no-restricted-imports');
    expect(lintAs('common/probe.ts', BAD)).toContain('@typescript-eslint/no-restricted-imports');
    expect(
      lintAs(
        'workflows/probe/llm.ts',
        "import { ChatOpenAI } from '@langchain/openai';\nexport const m = ChatOpenAI;\n"
      )
    ).toContain('@typescript-eslint/no-restricted-imports');
  });

  it('lint allows type-only imports there, and Node built-ins in activities/', () => {
    expect(
      lintAs('workflows/probe/types.ts', "import type { Stats } from 'node:fs';\nexport type S = Stats;\n")
    ).toEqual([]);
    expect(lintAs('activities/probe.ts', BAD)).not.toContain('@typescript-eslint/no-restricted-imports');
  });

  it('the workflow bundle build fails on it', async () => {
    const base = path.join(root, '.klea', 'test');
    mkdirSync(base, { recursive: true });
    const dir = mkdtempSync(path.join(base, 'probe-'));
    try {
      writeFileSync(path.join(dir, 'index.ts'), BAD);
      await expect(buildWorkflowBundle(path.join(dir, 'index.ts'))).rejects.toThrow(/disallowed modules[\s\S]*'fs'/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
