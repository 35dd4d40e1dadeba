/**
 * A change that would break a code or config file's syntax is refused (tools/workspace/syntax-check.ts): the
 * parser's message goes back to the model and the file stays as it was.
 */
import { existsSync } from 'node:fs';
import { checkParses, languageOf } from '../../tools/workspace/syntax-check';

const refused = (before: string | null, after: string, file: string) => checkParses(before, after, file);

describe('a change that breaks a file is refused with the parser’s message', () => {
  it.each([
    [
      'format.js',
      'function f(n) {\n  return n;\n}\nmodule.exports = { f };\n',
      '512 B\n',
      /format\.js would not parse as JavaScript.*line 1: SyntaxError: Unexpected identifier 'B'/,
    ],
    [
      'dates.py',
      'def is_leap(y):\n    return y % 4 == 0\n',
      'def is_leap(y):\n    return y % 4 == 0 and\n',
      /dates\.py would not parse as Python.*line 2: invalid syntax/,
    ],
    [
      'count.sh',
      'for f in logs/*.log; do\n  grep -c ERROR "$f"\ndone\n',
      'for f in logs/*.log; do\n  grep -c ERROR "$f"\n',
      /count\.sh would not parse as a shell script.*syntax error/,
    ],
    ['package.json', '{"name": "x"}\n', '{"name": "x",}\n', /package\.json would not parse as JSON/],
    [
      'config.yaml',
      'server:\n  port: 80\n',
      'server:\n  port: 80\n port: 81\n',
      /config\.yaml would not parse as YAML/,
    ],
    ['pyproject.toml', '[project]\nname = "x"\n', '[project]\nname = "x\n', /pyproject\.toml would not parse as TOML/],
  ])('%s', async (file, before, after, message) => {
    await expect(refused(before, after, file)).rejects.toThrow(message);
    await expect(refused(before, after, file)).rejects.toThrow(/nothing changed. As it is, it parses\./);
    // The control: the same file changed validly goes ahead.
    await expect(
      refused(
        before,
        before.replace(/x|80|n;|4 == 0|ERROR/, (m) => `${m} `),
        file
      )
    ).resolves.toBeUndefined();
  });

  it('a new Python, JSON, TOML or shell file that would not parse is refused too', async () => {
    await expect(refused(null, 'def f(:\n', 'new.py')).rejects.toThrow(/new\.py would not parse as Python/);
    await expect(refused(null, 'def f():\n    return 1\n', 'new.py')).resolves.toBeUndefined();
    await expect(refused(null, '{"a": }', 'new.json')).rejects.toThrow(/new\.json would not parse as JSON/);
  });

  it('a new JavaScript or YAML file is not judged: JSX in a .js file, a Helm template', async () => {
    await expect(refused(null, 'const App = () => <div>hi</div>;\n', 'App.js')).resolves.toBeUndefined();
    await expect(
      refused(null, 'replicas: {{ .Values.replicas }}\n  x: [\n', 'templates/deploy.yaml')
    ).resolves.toBeUndefined();
    // The control: the same JSX written over a plain script that parses is refused.
    await expect(refused('const a = 1;\n', 'const App = () => <div>hi</div>;\n', 'App.js')).rejects.toThrow(
      /would not parse as JavaScript/
    );
  });

  it('a JavaScript module parses as well as a script', async () => {
    const before = 'const a = 1;\n';
    await expect(refused(before, 'export const a = 1;\nimport x from "y";\n', 'm.js')).resolves.toBeUndefined();
    await expect(refused(before, 'return 1;\n', 'cjs.js')).resolves.toBeUndefined();
  });

  it('a file that does not parse now, an empty text or an unknown kind is not judged', async () => {
    // tsconfig.json with comments is not JSON: its author's format is kept as it is.
    await expect(refused('{ // c\n}\n', '{ // d\n}\n', 'tsconfig.json')).resolves.toBeUndefined();
    await expect(refused('a = 1\n', '', 'a.py')).resolves.toBeUndefined();
    await expect(refused(null, '512 B', 'notes.md')).resolves.toBeUndefined();
    // Over a million characters: not held up parsing it (the control, the same break in a short text, is above).
    await expect(refused('{}\n', `{"a": ${' '.repeat(1_000_000)}`, 'big.json')).resolves.toBeUndefined();
    expect(languageOf('README.md')).toBeNull();
    expect(languageOf('Build.PY')?.name).toBe('Python');
  });

  it('nothing is run: a parsed Python file that would write a file writes nothing', async () => {
    const marker = `/tmp/klea-syntax-${process.pid}`;
    await refused(null, `open(${JSON.stringify(marker)}, "w").write("x")\n`, 'w.py');
    await refused('1;\n', `require("fs").writeFileSync(${JSON.stringify(marker)}, "x")\n`, 'w.js');
    await refused(null, `touch ${marker}\n`, 'w.sh');
    expect(existsSync(marker)).toBe(false);
  });
});
