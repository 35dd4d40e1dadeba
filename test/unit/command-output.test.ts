import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withoutRuntimeFrames } from '../../common/command-output';
import { lastOutput } from '../../activities/llm/file-content';
import { pickToolsPrompt } from '../../activities/llm/pick-prompt';
import { cutOutput } from '../../workflows/task/text';

/** What a program printed on stderr when it failed, run for real. */
function stderrOf(cmd: string, args: string[], cwd: string): string {
  try {
    execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    return String((err as { stderr: Buffer }).stderr);
  }
  throw new Error(`${cmd} did not fail`);
}

describe("a command's output is shown without the runtime's own stack frames", () => {
  const dir = mkdtempSync(join(tmpdir(), 'klea-frames-'));
  writeFileSync(
    join(dir, 'slug.test.js'),
    "const assert = require('assert');\nassert.strictEqual('Hello', 'hello');\n"
  );
  writeFileSync(join(dir, 'tool.py'), "raise ValueError('bad unit')\n");

  it("Node's failure keeps its error, the project's frame and the fields; its internal frames and version go", () => {
    const raw = stderrOf(process.execPath, ['slug.test.js'], dir);
    expect(raw).toMatch(/node:internal\//);
    const shown = withoutRuntimeFrames(raw);
    expect(shown).not.toMatch(/node:internal|^Node\.js v/m);
    expect(shown).toContain('AssertionError [ERR_ASSERTION]');
    expect(shown).toMatch(/at Object\.<anonymous> \(.*slug\.test\.js:2:\d+\)/);
    expect(shown).toMatch(/\{\n\s+generatedMessage: true,[\s\S]*actual: 'Hello',[\s\S]*\}/);
    expect(shown.length).toBeLessThan(raw.length - 300);
  });

  it("Python's frozen startup frames go; the module's own frame and the error stay", () => {
    const raw = stderrOf('python3', ['-m', 'tool'], dir);
    expect(raw).toContain('<frozen runpy>');
    expect(withoutRuntimeFrames(raw)).toBe(
      raw
        .split('\n')
        .filter((l) => !l.includes('<frozen'))
        .join('\n')
    );
    expect(withoutRuntimeFrames(raw)).toMatch(/File ".*tool\.py", line 1, in <module>\n.*\nValueError: bad unit/);
  });

  it('the control: output with no such frame is the same text', () => {
    const text = 'exit code: 1\n--- stderr ---\n    at check (/p/lib/internal.js:3:9)\nNode.js is fine\n';
    expect(withoutRuntimeFrames(text)).toBe(text);
  });

  it("a step's evidence, a repair pick's earlier call and a whole-file write's failing run leave them out", () => {
    const raw = `exit code: 1\n--- stderr ---\n${stderrOf(process.execPath, ['slug.test.js'], dir)}`;
    expect(cutOutput(raw, 800)).not.toContain('node:internal');
    const prompt = pickToolsPrompt({
      projectDir: dir,
      toolAccess: 'full',
      goal: 'Fix slug.js so the test passes.',
      steps: [
        {
          id: 's1',
          title: 'Fix slug.js',
          instruction: 'Fix slug.js.',
          dependencyResults: [],
          earlierCalls: [
            { tool: 'workspace__run_command', args: { command: 'node slug.test.js' }, status: 'error', text: raw },
          ],
        },
      ],
    });
    const text = JSON.stringify(prompt);
    expect(text).toContain('ERR_ASSERTION');
    expect(text).not.toContain('node:internal');
    const ran = lastOutput([
      { tool: 'workspace__run_command', args: { command: 'node slug.test.js' }, status: 'error', text: raw },
    ]);
    expect(ran?.output).toContain('ERR_ASSERTION');
    expect(ran?.output).not.toContain('node:internal');
  });
});
