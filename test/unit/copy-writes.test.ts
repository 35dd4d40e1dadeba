import { copiesForWrites } from '../../activities/llm/copy-writes';
import { describeTool, type PickedCall } from '../../common/tools';

const tool = (name: string) =>
  describeTool('workspace', { name, description: name, inputSchema: { type: 'object', properties: {} } });
const workspace = ['read_file', 'write_file', 'edit_file', 'run_command'].map(tool);
const write = (path: string, stepId = 's1', name = 'write_file'): PickedCall => ({
  stepId,
  server: 'workspace',
  tool: name,
  qualifiedName: `workspace__${name}`,
  args: { path, content: 'made up' },
  readOnly: false,
  idempotent: false,
  stepDone: false,
});

describe('a file a step copies or moves is copied by a command, never written anew', () => {
  const existing = ['logo.png', 'hero.png', 'index.html', 'docs/a.md', "it's.png", 'README.md'];
  const moves = {
    id: 's1',
    instruction: 'Move the .png files into assets/img/.',
    expect: { changes: ['assets/img/logo.png', 'assets/img/hero.png'] },
  };

  it('a write of a new file that mirrors a project file is a cp of that file, its folder made first; with a repair', () => {
    const r = copiesForWrites(
      [moves],
      [write('assets/img/logo.png'), write('assets/img/hero.png', 's1', 'edit_file'), write('assets/img/logo.png')],
      workspace,
      existing
    );
    expect(r.calls.map((c) => [c.qualifiedName, c.args, c.stepDone])).toEqual([
      [
        'workspace__run_command',
        { command: "mkdir -p -- 'assets/img' && cp -P -- 'logo.png' 'assets/img/logo.png'" },
        false,
      ],
      [
        'workspace__run_command',
        { command: "mkdir -p -- 'assets/img' && cp -P -- 'hero.png' 'assets/img/hero.png'" },
        false,
      ],
    ]);
    expect(r.repairs[0]).toEqual({
      stepId: 's1',
      repair: 'assets/img/logo.png: copied from logo.png by a command, not written anew',
    });
    // A name a shell would read: quoted.
    const odd = { id: 's2', instruction: "Copy it's.png to old/.", expect: { changes: ["old/it's.png"] } };
    expect(copiesForWrites([odd], [write("old/it's.png", 's2')], workspace, existing).calls[0].args.command).toBe(
      "mkdir -p -- 'old' && cp -P -- 'it'\\''s.png' 'old/it'\\''s.png'"
    );
  });

  it('a repair round after one of the files was copied copies the other', () => {
    const after = [...existing, 'assets/img/logo.png'];
    const r = copiesForWrites([moves], [write('assets/img/hero.png')], workspace, after);
    expect(r.calls[0].args.command).toBe("mkdir -p -- 'assets/img' && cp -P -- 'hero.png' 'assets/img/hero.png'");
  });

  it('a write after the step’s own command that moved the file is left out: the move did the work', () => {
    const mv: PickedCall = {
      ...write('x'),
      tool: 'run_command',
      qualifiedName: 'workspace__run_command',
      args: { command: 'mv logo.png assets/img/' },
    };
    const r = copiesForWrites(
      [moves],
      [mv, write('assets/img/logo.png'), write('assets/img/hero.png')],
      workspace,
      existing
    );
    expect(r.calls.map((c) => c.args.command)).toEqual([
      'mv logo.png assets/img/',
      "mkdir -p -- 'assets/img' && cp -P -- 'hero.png' 'assets/img/hero.png'",
    ]);
  });

  it('the control: text files of the same name in two folders, and a file the plan does not name, are written as made', () => {
    const readmes = {
      id: 's4',
      instruction: 'Add a README.md to pkg/a and pkg/b.',
      expect: { changes: ['pkg/a/README.md', 'pkg/b/README.md'] },
    };
    const calls = [write('pkg/a/README.md', 's4'), write('pkg/b/README.md', 's4'), write('assets/logo.png')];
    expect(copiesForWrites([readmes, moves], calls, workspace, existing).calls).toEqual(calls);
  });

  it('the control: a lone new file, a file the project has, another step, no listing or no run_command: as made', () => {
    const lone = { id: 's3', instruction: 'Write the docs index.', expect: { changes: ['site/index.html'] } };
    const calls = [write('site/index.html', 's3'), write('logo.png'), write('assets/img/logo.png', 's9')];
    expect(copiesForWrites([moves, lone], calls, workspace, existing).calls).toEqual(calls);
    expect(copiesForWrites([moves], [write('assets/img/logo.png')], workspace, null).calls[0].qualifiedName).toBe(
      'workspace__write_file'
    );
    const readOnly = workspace.filter((t) => t.name !== 'run_command');
    expect(copiesForWrites([moves], [write('assets/img/logo.png')], readOnly, existing).calls[0].qualifiedName).toBe(
      'workspace__write_file'
    );
  });
});
