/**
 * The small profile's help (activities/llm/small-model.ts): the order tools are offered in and the paths a sent
 * schema holds, decided by the plan's structure and the listing, never by the words of a request.
 */
import { pickToolsFunctions } from '../../activities/llm/nodes';
import { boundNamedFiles, CUT_MARK } from '../../activities/llm/named-files';
import { stepUnshownFiles } from '../../activities/prompt-context';
import { fileChangesOnly } from '../../activities/llm/planner';
import { foldersNotFiles } from '../../activities/llm/folder-writes';
import { changesSomething, plannedFiles, plannedFolders, type StepExpect } from '../../common/plan';
import {
  checksFirst,
  copiesFiles,
  mirroredFiles,
  narrowPaths,
  PLANNED_WRITES,
  readsBeforeBlindWrites,
  readsFirst,
  suggestedTools,
  writesForNewFiles,
  writesForUnchanged,
} from '../../activities/llm/small-model';
import { piped } from '../../activities/llm/shell-words';
import { describeTool, type PickedCall, type ToolDescriptor } from '../../common/tools';

const tool = (name: string) =>
  describeTool('workspace', {
    name,
    description: name,
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  });
const workspace = ['read_file', 'list_dir', 'grep', 'write_file', 'edit_file', 'run_command'].map(tool);
const names = (ts: ToolDescriptor[]) => ts.map((t) => t.name);

describe('small profile: the tools a step needs, named in its pick', () => {
  const suggested = (step: Parameters<typeof suggestedTools>[1]) =>
    suggestedTools(workspace, step).map((n) => n.replace('workspace__', ''));

  it('a step that is to create a file is told write_file first, one that changes a file edit_file', () => {
    expect(suggested({ expect: { changes: ['hello.py'] }, newFiles: ['hello.py'] })).toEqual([
      'write_file',
      'edit_file',
    ]);
    expect(suggested({ expect: { changes: ['calc.py'] } })).toEqual(['edit_file', 'write_file']);
  });

  it('a step with a check is told run_command; read_file only when a file it names is shown in part', () => {
    expect(suggested({ expect: { check: 'python3 -m pytest' } })).toEqual(['run_command']);
    const [cut] = boundNamedFiles([{ path: 'big.py', text: 'x\n'.repeat(5000) }]);
    expect(suggested({ expect: { changes: ['big.py'] }, files: [cut] })).toEqual([
      'edit_file',
      'write_file',
      'read_file',
    ]);
    expect(suggested({ expect: { changes: ['a.py'] }, files: [{ path: 'a.py', text: 'x' }] })).not.toContain(
      'read_file'
    );
  });

  it('a step that is to make or fill a folder is told run_command first; a write aimed at the folder makes it', () => {
    expect(suggested({ expect: { changes: ['logs/'] } })).toEqual(['run_command']);
    expect(suggested({ expect: { changes: ['logs/', 'logs/a.log'] }, newFiles: ['logs/a.log'] })).toEqual([
      'run_command',
      'write_file',
      'edit_file',
    ]);
    const write = (path: string, stepId = 's1'): PickedCall => ({
      stepId,
      server: 'workspace',
      tool: 'write_file',
      qualifiedName: 'workspace__write_file',
      args: { path, content: '' },
      readOnly: false,
      idempotent: false,
      stepDone: false,
    });
    const steps = [
      { id: 's1', expect: { changes: ['logs/'] } },
      { id: 's2', expect: { changes: ['notes.txt'] } },
    ];
    const r = foldersNotFiles(steps, [write('./logs'), write('logs/a.log'), write('logs', 's2')], workspace);
    expect(r.calls.map((c) => [c.stepId, c.qualifiedName, c.args, c.stepDone])).toEqual([
      ['s1', 'workspace__run_command', { command: "mkdir -p -- 'logs'" }, false],
      // A file in the folder, and a step whose plan names no such folder: as made.
      ['s1', 'workspace__write_file', { path: 'logs/a.log', content: '' }, false],
      ['s2', 'workspace__write_file', { path: 'logs', content: '' }, false],
    ]);
    expect(r.repairs).toEqual([
      { stepId: 's1', repair: 'logs: the plan has it as a folder; made with mkdir, not written as a file' },
    ]);
    // Without run_command (read-only access), nothing is changed.
    const readOnly = workspace.filter((t) => t.name !== 'run_command');
    expect(foldersNotFiles(steps, [write('logs')], readOnly).calls[0].qualifiedName).toBe('workspace__write_file');
  });

  it('a step with no plan of changes or checks is told nothing: every tool is as likely', () => {
    expect(suggested({ files: [{ path: 'calc.py', text: 'x' }] })).toEqual([]);
  });

  it('the offered functions keep the server order for every pick (the prompt prefix the server caches)', () => {
    const fns = pickToolsFunctions(workspace, ['s1']).map((f) => f.function.name.replace('workspace__', ''));
    expect(fns).toEqual([...names(workspace), 'no_suitable_tool']);
  });
});

describe('small profile: paths held to a list', () => {
  type Fn = { function: { name: string; parameters: { properties: { path?: { enum?: string[] } } } } };
  const paths = (opts: Parameters<typeof narrowPaths>[1]) =>
    Object.fromEntries(
      (narrowPaths(pickToolsFunctions(workspace, ['s1']), opts) as unknown as Fn[])
        .filter((f) => f.function.name !== 'no_suitable_tool')
        .map((f) => [f.function.name.replace('workspace__', ''), f.function.parameters.properties.path?.enum])
    );
  const existingFiles = ['README.md', 'calc.py'];
  const shownInFull = new Set(['calc.py']);

  it("holds an edit to the project's files and a read to those not shown; every tool stays offered", () => {
    const held = paths({ existingFiles, shownInFull });
    expect(held).toMatchObject({ read_file: ['README.md'], edit_file: existingFiles, write_file: undefined });
    expect(Object.keys(held)).toEqual(names(workspace));
  });

  it('a write goes to the new files the steps name, or to a file shown whole', () => {
    expect(paths({ existingFiles, shownInFull, newFiles: ['owner.txt'] })).toMatchObject({
      write_file: ['owner.txt', 'calc.py'],
    });
  });

  it("a write goes only to the files the steps' plan is to change, when it names them", () => {
    expect(paths({ existingFiles, shownInFull, newFiles: ['owner.txt'], planned: ['calc.py'] })).toMatchObject({
      write_file: ['calc.py'],
      edit_file: ['calc.py'],
      read_file: ['README.md'],
    });
    // The control: without a plan naming files, a file shown whole may be written too.
    expect(paths({ existingFiles, shownInFull, newFiles: ['owner.txt'] }).write_file).toContain('calc.py');
  });

  it('without the whole listing nothing is held; with every file shown read_file stays offered, unheld', () => {
    expect(Object.values(paths({ newFiles: ['owner.txt'] })).every((v) => v === undefined)).toBe(true);
    const all = paths({ existingFiles: ['calc.py'], shownInFull });
    expect(Object.keys(all)).toContain('read_file');
    expect(all.read_file).toBeUndefined();
  });

  it('the standard profile sends every schema as the server gave it', () => {
    for (const f of pickToolsFunctions(workspace, ['s1']) as unknown as Fn[])
      expect(f.function.parameters.properties.path?.enum).toBeUndefined();
  });
});

describe('small profile: a repair round writes the file the plan names when the pick changes nothing', () => {
  const read = {
    stepId: 's1',
    server: 'workspace',
    tool: 'read_file',
    qualifiedName: 'workspace__read_file',
    args: { path: 'README.md' },
    readOnly: true,
    idempotent: true,
  };

  it('a pick that only reads again becomes a write of the unchanged new file, for the whole-file write to fill', () => {
    const [write] = writesForUnchanged([{ id: 's1', unchanged: ['hello.py'], newFiles: ['hello.py'] }], [read]);
    expect(write).toMatchObject({ stepId: 's1', qualifiedName: 'workspace__write_file', args: { path: 'hello.py' } });
    expect(PLANNED_WRITES.has(write)).toBe(true);
  });

  it('an existing file is written for the model only when the request, not put as a question, names it', () => {
    const users = { path: 'users.json', text: '[{"name": "ana", "active": true}]\n' };
    const step = { id: 's1', unchanged: ['users.json'], files: [users] };
    // Not named by the request, or named by a question about it: left as it is.
    expect(writesForUnchanged([step], [read])).toEqual([read]);
    expect(writesForUnchanged([step], [read], 'How many users in users.json are active?')).toEqual([read]);
    // Named by the request, shown whole or in part: written, for the whole-file write to fill.
    const [write] = writesForUnchanged([step], [read], 'Mark ana inactive in users.json.');
    expect(write).toMatchObject({ qualifiedName: 'workspace__write_file', args: { path: 'users.json' } });
    expect(PLANNED_WRITES.has(write)).toBe(true);
    const part = { ...users, part: { from: 1, to: 1, total: 300, whole: users.text } };
    const [inPart] = writesForUnchanged([{ ...step, files: [part] }], [read], 'Mark ana inactive in users.json.');
    expect(inPart).toMatchObject({ qualifiedName: 'workspace__write_file', args: { path: 'users.json' } });
  });

  it('in a follow-up, a file the earlier turns name is written too: the request\'s "do that" names none', () => {
    const cfg = { path: 'setup.cfg', text: '[metadata]\nversion = 1.0\n' };
    const step = { id: 's1', unchanged: ['setup.cfg'], files: [cfg] };
    const turns = ['What version does setup.cfg give?', 'setup.cfg gives 1.0. Shall I set it to 1.1?'];
    const [write] = writesForUnchanged([step], [read], 'Yes, do that.', turns);
    expect(write).toMatchObject({ qualifiedName: 'workspace__write_file', args: { path: 'setup.cfg' } });
    // Controls: turns that name no file, and a follow-up put as a question.
    expect(writesForUnchanged([step], [read], 'Yes, do that.', ['Shall I bump the version?'])).toEqual([read]);
    expect(writesForUnchanged([step], [read], 'Why?', turns)).toEqual([read]);
  });

  it('a pick that changes something, a file seen only in part, or a step with nothing missing is left alone', () => {
    const edit = { ...read, tool: 'edit_file', qualifiedName: 'workspace__edit_file', args: { path: 'a.py' } };
    expect(
      writesForUnchanged([{ id: 's1', unchanged: ['a.py'], files: [{ path: 'a.py', text: 'x' }] }], [edit])
    ).toEqual([edit]);
    const [cut] = boundNamedFiles([{ path: 'big.py', text: 'x\n'.repeat(5000) }]);
    expect(writesForUnchanged([{ id: 's1', unchanged: ['big.py'], files: [cut] }], [read], 'Fix big.py.')).toEqual([
      read,
    ]);
    expect(writesForUnchanged([{ id: 's1', unchanged: [] }], [read])).toEqual([read]);
    // A folder not made yet, where a file of its name is shown and the request names it: never written as a file.
    const logs = { id: 's1', unchanged: ['logs/'], files: [{ path: 'logs', text: '' }], newFiles: ['logs/'] };
    expect(writesForUnchanged([logs], [read], 'Move the logs into logs/ (make it).')).toEqual([read]);
  });
});

describe('small profile: a step that only creates files is written without a pick', () => {
  it('each new file its plan names becomes a write, for the whole-file write to fill', () => {
    const calls = writesForNewFiles([
      { id: 's1', expect: { changes: ['./hello.py', 'test_hello.py'] }, newFiles: ['hello.py', 'test_hello.py'] },
    ]);
    expect(calls.map((c) => [c.stepId, c.qualifiedName, c.args.path])).toEqual([
      ['s1', 'workspace__write_file', 'hello.py'],
      ['s1', 'workspace__write_file', 'test_hello.py'],
    ]);
    expect(calls.every((c) => PLANNED_WRITES.has(c))).toBe(true);
  });

  it('a step that changes an existing file, has no plan of changes, or is under way is left to the pick', () => {
    expect(
      writesForNewFiles([{ id: 's1', expect: { changes: ['hello.py', 'README.md'] }, newFiles: ['hello.py'] }])
    ).toEqual([]);
    expect(writesForNewFiles([{ id: 's1', expect: { check: 'python3 hello.py' }, newFiles: ['hello.py'] }])).toEqual(
      []
    );
    const fresh = { id: 's1', expect: { changes: ['hello.py'] }, newFiles: ['hello.py'] };
    expect(writesForNewFiles([{ ...fresh, earlierCalls: [{}] }])).toEqual([]);
    expect(writesForNewFiles([{ ...fresh, notDone: 'the check failed' }])).toEqual([]);
    expect(writesForNewFiles([fresh])).toHaveLength(1);
  });
});

describe('small profile: new files named as those the project has elsewhere are copies or moves of them', () => {
  const project = ['debug.log', 'server.log', 'notes.txt', 'src/app.py', 'src/__init__.py', 'README.md'];
  const step = (changes: string[], instruction = 'Do it.') => ({
    id: 's2',
    title: 'Step',
    instruction,
    expect: { changes },
    newFiles: changes,
  });

  it('mirroredFiles: a new file with the name of one in another folder, not the file itself', () => {
    expect(mirroredFiles(['logs/debug.log', './logs/server.log', 'logs/index.md'], project)).toEqual([
      'logs/debug.log',
      './logs/server.log',
    ]);
    expect(mirroredFiles(['src/app.py', 'debug.log'], project)).toEqual([]);
    expect(mirroredFiles(['logs/debug.log'], null)).toEqual([]);
  });

  it('several such files, or one whose original the step names, are not written from nothing: run_command first', () => {
    const moving = step(['logs/debug.log', 'logs/server.log']);
    const archiving = step(['archive/notes.txt'], 'Put notes.txt into archive/.');
    for (const s of [moving, archiving]) {
      expect(copiesFiles(s, project)).toBe(true);
      expect(writesForNewFiles([s], project)).toEqual([]);
      expect(suggestedTools(workspace, s, project).map((n) => n.replace('workspace__', ''))).toEqual([
        'run_command',
        'write_file',
        'edit_file',
      ]);
    }
  });

  it('a lone file named as another, or a step that creates other files too, is a new file like any other', () => {
    for (const s of [
      step(['docs/README.md'], 'Write docs/README.md about the API.'),
      step(['tests/__init__.py', 'tests/test_app.py']),
      step(['logs/index.md']),
    ]) {
      expect(copiesFiles(s, project)).toBe(false);
      expect(writesForNewFiles([s], project).length).toBeGreaterThan(0);
      expect(suggestedTools(workspace, s, project)[0]).toBe('workspace__write_file');
    }
  });
});

describe('small profile: a step whose plan only asks for a check runs it first', () => {
  const withRunner = [...workspace];
  it('the check becomes its first call; a step that changes files, is under way or has no check is left alone', () => {
    const [call] = checksFirst(withRunner, [{ id: 's1', expect: { check: ' python3 stats.py ' } }]);
    expect(call).toMatchObject({
      stepId: 's1',
      qualifiedName: 'workspace__run_command',
      args: { command: 'python3 stats.py' },
    });
    expect(call.stepDone).toBeUndefined();
    expect(checksFirst(withRunner, [{ id: 's1', expect: { check: 'make test', changes: ['a.py'] } }])).toEqual([]);
    expect(checksFirst(withRunner, [{ id: 's1', expect: { check: 'make test' }, earlierCalls: [{}] }])).toEqual([]);
    expect(checksFirst(withRunner, [{ id: 's1', expect: { check: 'make test' }, notDone: 'failed' }])).toEqual([]);
    expect(checksFirst(withRunner, [{ id: 's1' }])).toEqual([]);
  });

  it('not a check that pipes output into another command: the step is picked, and its check runs after', () => {
    const run = (check: string) => checksFirst(withRunner, [{ id: 's1', expect: { check } }]);
    expect(run("python3 stats.py | awk '{print $1}' | bc -l")).toEqual([]);
    expect(run('cut -d, -f2 sales.csv|sort')).toEqual([]);
    // The controls: a list, an alternative and a quoted bar are not pipes.
    expect(run('python3 -m pytest -q || python3 -m unittest')).toHaveLength(1);
    expect(run("grep -E 'a|b' notes.txt")).toHaveLength(1);
    expect(run('node -e "console.log(1 | 2)" && echo ok')).toHaveLength(1);
    expect(piped('a | b')).toBe(true);
  });

  it('never where run_command is not offered (read-only access)', () => {
    const readOnly = workspace.filter((t) => t.name !== 'run_command');
    expect(checksFirst(readOnly, [{ id: 's1', expect: { check: 'python3 stats.py' } }])).toEqual([]);
  });
});

/** A tool step of a plan with `expect` as given. */
const planStep = (id: string, expect: StepExpect) => ({
  id,
  title: 't',
  instruction: 'i',
  depends_on: [],
  needs_tool: true,
  questions: [],
  expect,
});

describe("a plan's expect.changes names files only", () => {
  it('a value that is no file is left out and told; files of the listing and new file names stay', () => {
    const plan = {
      goal: 'g',
      steps: [
        planStep('s1', { changes: ['5432'] }),
        planStep('s2', { changes: ['Makefile', 'new.py', 'port'], check: 'make' }),
      ],
      review: { before_work: false, after_step_ids: [] },
    };
    const r = fileChangesOnly(plan, ['Makefile']);
    expect(r.plan.steps[0].expect).toBeUndefined();
    expect(r.plan.steps[1].expect).toEqual({ changes: ['Makefile', 'new.py'], check: 'make' });
    expect(r.repairs).toEqual([
      'step "s1": expect.changes named "5432", no file: left out',
      'step "s2": expect.changes named "port", no file: left out',
    ]);
  });
});

describe("a plan's expect.changes may name folders", () => {
  const step = (changes: string[]) => planStep('s1', { changes });
  it('a path ending in "/" is a folder, and a folder of the listing named without it becomes one; none is a file', () => {
    const plan = {
      goal: 'g',
      steps: [step(['logs/', 'src', './out/', 'debug.log', '../up/', '5432'])],
      review: { before_work: false, after_step_ids: [] },
    };
    const r = fileChangesOnly(plan, ['src/a.py', 'debug.log']);
    expect(r.plan.steps[0].expect).toEqual({ changes: ['logs/', 'src/', './out/', 'debug.log'] });
    expect(r.repairs).toEqual(['step "s1": expect.changes named "../up/", "5432", no file: left out']);
    expect(plannedFiles(r.plan.steps[0])).toEqual(['debug.log']);
    expect(plannedFolders(r.plan.steps[0])).toEqual(['logs', 'src', 'out']);
    // A step that only makes a folder changes something; one that names nothing does not.
    expect([changesSomething(step(['logs/'])), changesSomething(step([]))]).toEqual([true, false]);
  });

  it('a name without "/" is a folder when the plan puts files in it or the request names it with its "/"', () => {
    const plan = (...steps: ReturnType<typeof step>[]) => ({
      goal: 'g',
      steps,
      review: { before_work: false, after_step_ids: [] },
    });
    const made = plan(step(['logs']), { ...step(['logs/debug.log']), id: 's2' });
    expect(fileChangesOnly(made, ['debug.log']).plan.steps[0].expect).toEqual({ changes: ['logs/'] });
    const asked = fileChangesOnly(plan(step(['logs', 'out'])), ['debug.log'], 'Move them into a logs/ directory.');
    expect(asked.plan.steps[0].expect).toEqual({ changes: ['logs/'] });
    expect(asked.repairs).toEqual(['step "s1": expect.changes named "out", no file: left out']);
    // Control: a request naming the folder without its "/" (or inside a longer path, or a web address) does not.
    for (const request of ['Move them into logs.', 'See var/logs/ there.', 'Open http://example.org/logs/ now.'])
      expect(fileChangesOnly(plan(step(['logs'])), ['debug.log'], request).plan.steps[0].expect).toBeUndefined();
  });
});

describe('small profile: a step that expects nothing reads first a file it names that no prompt could show', () => {
  it('reads the first such file, left open for its pick; never for a step with an expect, a call made, or a repair', () => {
    const calls = readsFirst(workspace, [
      { id: 's1', unshown: ['.env', 'big.py'] },
      { id: 's2', unshown: ['.env'], expect: { check: 'make' } },
      { id: 's3', unshown: ['.env'], earlierCalls: [{}] },
      { id: 's4', unshown: ['.env'], notDone: 'x' },
      { id: 's5', unshown: [] },
    ]);
    expect(calls.map((c) => [c.stepId, c.qualifiedName, c.args, c.stepDone])).toEqual([
      ['s1', 'workspace__read_file', { path: '.env' }, false],
    ]);
    expect(
      readsFirst(
        workspace.filter((t) => t.name !== 'read_file'),
        [{ id: 's1', unshown: ['.env'] }]
      )
    ).toEqual([]);
  });

  it('the files a step names that its prompt does not show whole: cut, or not read for it (behind the gate)', () => {
    const step = { id: 's1', title: 't', instruction: 'Look at .env, big.py and small.py.', dependencyResults: [] };
    const shown = [
      { path: 'big.py', text: `x\n${CUT_MARK}` },
      { path: 'small.py', text: 'y\n' },
    ];
    expect(stepUnshownFiles(['.env', 'big.py', 'small.py', 'other.py'], step, shown)).toEqual(['.env', 'big.py']);
  });
});

describe('small profile: a write over a file the model has not seen reads it first', () => {
  const write = (path: string) => ({
    stepId: 's1',
    server: 'workspace',
    tool: 'write_file',
    qualifiedName: 'workspace__write_file',
    args: { path, content: 'DEBUG=false\n' },
    readOnly: false,
    idempotent: true,
  });
  const existing = ['.env', 'app.py', 'big.py'];

  it('a write over an existing file no prompt showed whole becomes a read of it, the step left open', () => {
    const [cut] = boundNamedFiles([{ path: 'big.py', text: 'x\n'.repeat(5000) }]);
    const out = readsBeforeBlindWrites(
      [{ id: 's1', files: [cut] }],
      [write('.env'), write('./big.py')],
      workspace,
      existing
    );
    expect(out.calls.map((c) => [c.qualifiedName, c.args, c.stepDone])).toEqual([
      ['workspace__read_file', { path: '.env' }, false],
      ['workspace__read_file', { path: 'big.py' }, false],
    ]);
    expect(out.repairs[0]).toEqual({
      stepId: 's1',
      repair: 'write_file on .env, which the model had not seen: read it first',
    });
  });

  it('a write over a file shown whole or read by the step, or a new file, runs as made; so does anything without the listing', () => {
    const shown = [{ id: 's1', files: [{ path: 'app.py', text: 'print(1)\n' }] }];
    const readEnv = [
      { id: 's1', earlierCalls: [{ tool: 'workspace__read_file', args: { path: '.env' }, status: 'ok' }] },
    ];
    const calls = [write('app.py'), write('new.py')];
    expect(readsBeforeBlindWrites(shown, calls, workspace, existing).calls).toEqual(calls);
    expect(readsBeforeBlindWrites(readEnv, [write('.env')], workspace, existing).calls).toEqual([write('.env')]);
    expect(readsBeforeBlindWrites([{ id: 's1' }], [write('.env')], workspace, null).calls).toEqual([write('.env')]);
    // The control: a read that failed (denied, say) has shown nothing.
    const denied = [
      { id: 's1', earlierCalls: [{ tool: 'workspace__read_file', args: { path: '.env' }, status: 'error' }] },
    ];
    expect(readsBeforeBlindWrites(denied, [write('.env')], workspace, existing).calls[0].qualifiedName).toBe(
      'workspace__read_file'
    );
  });

  it('an edit of a file no prompt showed at all is a read first; one of a file shown whole or in part runs', () => {
    const edit = (path: string) => ({
      ...write(path),
      tool: 'edit_file',
      qualifiedName: 'workspace__edit_file',
      args: { path, old_string: 'DEBUG', new_string: 'false' },
    });
    const part = { path: 'big.py', text: 'x\n', part: { from: 10, to: 11, total: 300, whole: 'x\n'.repeat(300) } };
    const shown = [{ id: 's1', files: [{ path: 'app.py', text: 'print(1)\n' }, part] }];
    const out = readsBeforeBlindWrites(shown, [edit('.env'), edit('app.py'), edit('big.py')], workspace, existing);
    expect(out.calls.map((c) => [c.qualifiedName, c.args.path])).toEqual([
      ['workspace__read_file', '.env'],
      ['workspace__edit_file', 'app.py'],
      ['workspace__edit_file', 'big.py'],
    ]);
    expect(out.repairs).toEqual([
      { stepId: 's1', repair: 'edit_file on .env, which the model had not seen: read it first' },
    ]);
    // The control: once the step has read it, the edit runs.
    const readEnv = [
      { id: 's1', earlierCalls: [{ tool: 'workspace__read_file', args: { path: '.env' }, status: 'ok' }] },
    ];
    expect(readsBeforeBlindWrites(readEnv, [edit('.env')], workspace, existing).calls).toEqual([edit('.env')]);
  });
});
