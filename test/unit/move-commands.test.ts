import { moveCommand, movesForCommands, movesOfOtherKinds, operandFiles } from '../../activities/llm/move-commands';
import { mentionedKinds } from '../../activities/llm/named-files';
import { plan, step } from '../support/task-driver';
import { copiesForWrites } from '../../activities/llm/copy-writes';
import { copiesFiles } from '../../activities/llm/small-model';
import { describeTool, type PickedCall } from '../../common/tools';

const workspace = ['read_file', 'write_file', 'edit_file', 'run_command'].map((name) =>
  describeTool('workspace', { name, description: name, inputSchema: { type: 'object', properties: {} } })
);

const run = (command: string, stepId = 's1', cwd?: string): PickedCall => ({
  stepId,
  server: 'workspace',
  tool: 'run_command',
  qualifiedName: 'workspace__run_command',
  args: { command, ...(cwd ? { cwd } : {}) },
  readOnly: false,
  idempotent: false,
  stepDone: false,
});
const commands = (r: { calls: PickedCall[] }) => r.calls.map((c) => c.args.command ?? c.args.path);

describe('the kinds of file a request names', () => {
  it('are the extensions it names files by, in any language, not those of files it names', () => {
    expect(mentionedKinds('Move the .log files into logs/.')).toEqual(['log']);
    expect(mentionedKinds('rm *.PNG and `.tmp` ones')).toEqual(['png', 'tmp']);
    expect(mentionedKinds('Lösche alle .txt-Dateien im obersten Ordner.')).toEqual(['txt']);
    expect(mentionedKinds('把所有 .md 文件移到 docs/')).toEqual(['md']);
    expect(mentionedKinds('Move the files ending in .log.')).toEqual(['log']);
    expect(mentionedKinds('Rename config.yml to config.yaml, keep ./run.sh, Node.js 1.2 and logs/.')).toEqual([]);
  });
});

describe('globs as the shell in the project folder reads them', () => {
  const files = ['a.log', '.hidden.log', 'old/x.log', 'old/deep/y.log', 'b.txt'];
  it('within one folder, a leading dot only by a dot', () => {
    expect(operandFiles('*.log', files)).toEqual(['a.log']);
    expect(operandFiles('.*.log', files)).toEqual(['.hidden.log']);
    expect(operandFiles('old/*.log', files)).toEqual(['old/x.log']);
    expect(operandFiles('**/*.log', files)).toEqual(['old/x.log']);
    expect(operandFiles('./b.txt', files)).toEqual(['b.txt']);
    expect(operandFiles('gone.txt', files)).toEqual([]);
  });
});

describe('a command that moves the wrong files moves those the plan does', () => {
  const listing = ['app.py', 'debug.log', 'notes.txt', 'server.log', 'worker.log', 'old/x.log'];
  const request = 'There are .log files lying around in the top folder. Move them into a logs/ directory.';
  const folderStep = {
    id: 's1',
    instruction: 'Move .log files into a logs/ directory',
    expect: { changes: ['logs/'] },
  };
  const LOGS_MOVED =
    "mkdir -p -- 'logs' && mv -- 'debug.log' 'logs/debug.log' && mv -- 'server.log' 'logs/server.log' && " +
    "mv -- 'worker.log' 'logs/worker.log'";

  it('a plan of files in the folder: each moved from the file of its name; a file of another kind stays', () => {
    const step = {
      id: 's2',
      instruction: 'Move all .log files from the top folder to the logs directory.',
      expect: { changes: ['logs/debug.log', 'logs/notes.txt', 'logs/server.log', 'logs/worker.log'] },
    };
    const r = movesForCommands(
      [step],
      [run('mv app.py debug.log logs/notes.txt server.log worker.log', 's2')],
      listing,
      request
    );
    expect(commands(r)).toEqual([LOGS_MOVED]);
    expect(r.calls[0].stepDone).toBe(false);
    expect(r.repairs).toEqual([
      {
        stepId: 's2',
        repair:
          '`mv app.py debug.log logs/notes.txt server.log worker.log` made the moves the plan asks for: ' +
          'debug.log → logs/debug.log, server.log → logs/server.log, worker.log → logs/worker.log',
      },
    ]);
  });

  it('a plan of the folder alone: the files of the step’s kinds, from the folder the command takes files from', () => {
    // old/x.log is in another folder than the one the model's command took from: it stays.
    expect(commands(movesForCommands([folderStep], [run('mv app.py logs/')], listing, request))).toEqual([LOGS_MOVED]);
    // Another move of the step in the same pick is left out (its files are moved); another call stays.
    const twice = movesForCommands(
      [folderStep],
      [run('mv app.py logs/'), run('mv app.py logs/'), run('ls')],
      listing,
      request
    );
    expect(commands(twice)).toEqual([LOGS_MOVED, 'ls']);
    const again = movesForCommands(
      [folderStep],
      [run('mv app.py debug.log logs/'), run('mv server.log logs/')],
      listing,
      request
    );
    expect(commands(again)).toEqual([LOGS_MOVED]);
  });

  it('the model says copy or move: a cp is made a copy, a git mv a git mv', () => {
    const step = {
      id: 's1',
      instruction: 'Copy them.',
      expect: { changes: ['backup/debug.log', 'backup/server.log'] },
    };
    const r = movesForCommands([step], [run('cp app.py backup/')], listing, 'Copy the .log files into backup/.');
    expect(commands(r)).toEqual([
      "mkdir -p -- 'backup' && cp -P -- 'debug.log' 'backup/debug.log' && cp -P -- 'server.log' 'backup/server.log'",
    ]);
    const git = movesForCommands([folderStep], [run('git mv -k app.py logs')], listing, request);
    expect(commands(git)[0]).toBe(LOGS_MOVED.replace(/&& mv --/g, '&& git mv --'));
  });

  it('a file of the kind the model takes beside the plan’s is no reason to replace it, nor moved by Klea', () => {
    const step = {
      id: 's1',
      instruction: 'Move the .log files.',
      expect: { changes: ['logs/debug.log', 'logs/server.log'] },
    };
    // worker.log is not in the plan, but of the kind: the model's command takes the right files and runs as it is.
    const right = [run('mkdir -p logs && mv *.log logs/')];
    const made = [...listing, 'logs/.keep'];
    expect(commands(movesForCommands([step], right, made, request))).toEqual(['mkdir -p logs && mv *.log logs/']);
    // The right file into a folder not there yet: made first.
    const images = { id: 's1', instruction: 'Move shot1.jpg into images/.', expect: { changes: ['images/shot1.jpg'] } };
    const shots = ['shot1.jpg', 'shot2.jpg', 'page.md'];
    expect(
      commands(movesForCommands([images], [run('mv shot1.jpg images/')], shots, 'Move shot1.jpg into images/.'))
    ).toEqual(["mkdir -p -- 'images' && mv shot1.jpg images/"]);
    // A plan that is wrong too: the model's command that takes no wrong file is its own, never the plan's move.
    const up = { id: 's2', instruction: 'Move the .md files into docs/guide/.', expect: { changes: ['setup.md'] } };
    const docs = ['docs/intro.md', 'docs/setup.md', 'README.md'];
    const mine = [run('mv docs/intro.md docs/guide/', 's2')];
    const kept = movesForCommands([up], mine, docs, 'Put the .md files of docs/ into docs/guide/.');
    expect(commands(kept)).toEqual(["mkdir -p -- 'docs/guide' && mv docs/intro.md docs/guide/"]);
    expect(kept.repairs[0].repair).toBe('docs/guide: made before `mv docs/intro.md docs/guide/`');
    expect(
      commands(
        movesForCommands(
          [images],
          [run('mv shot1.jpg images/')],
          [...shots, 'images/a.jpg'],
          'Move shot1.jpg into images/.'
        )
      )
    ).toEqual(['mv shot1.jpg images/']);
    // Taking app.py too, it is made the plan's moves alone: worker.log may be another step's.
    const r = movesForCommands([step], [run('mv app.py worker.log debug.log logs/')], listing, request);
    expect(commands(r)).toEqual([
      "mkdir -p -- 'logs' && mv -- 'debug.log' 'logs/debug.log' && mv -- 'server.log' 'logs/server.log'",
    ]);
  });

  it('kept: what Klea cannot read, a line that does more, a move in another folder, one that would overwrite', () => {
    const kept = [
      run('mkdir -p logs && mv debug.log server.log worker.log logs/'),
      run('mkdir logs'),
      run('cp debug.log a && mv app.py logs/'),
      run('mv app.py logs/ && git add -A'),
      // Each of these would be made Klea's command but for the rule that keeps it.
      run('cd . && mv app.py logs/'),
      run('mv "$f" app.py logs/'),
      run('mv old debug.log logs/'),
      run('echo moved > notes.txt && mv app.py logs/'),
      run('mv --target-directory=logs debug.log server.log worker.log'),
      // All but the .log files: two files of other kinds are the model's choice.
      run('mkdir -p logs && mv app.py notes.txt logs/'),
      run('mv -t logs app.py', 's1', 'old'),
      run('mv app.py logs/', 's9'),
    ];
    // (logs/ is there: a move into a folder not there yet is made Klea's command, which makes it.)
    const there = [...listing, 'logs/.keep'];
    expect(commands(movesForCommands([folderStep], kept, there, request))).toEqual(commands({ calls: kept }));
    // A name with a leading dot stays where the glob left it.
    const dotted = [...there, '.hidden.log'];
    expect(commands(movesForCommands([folderStep], [run('mv *.log logs/')], dotted, request))).toEqual([
      'mv *.log logs/',
    ]);
    // A file of that name in the folder already: the model's command runs, and Klea's never writes over it.
    const full = [...listing, 'logs/debug.log'];
    expect(commands(movesForCommands([folderStep], [run('mv app.py logs/')], full, request))).toEqual([
      'mv app.py logs/',
    ]);
    // A step that names no kind, for a request that names two: nothing to go by.
    const tidy = { id: 's1', instruction: 'Tidy up.', expect: { changes: ['logs/'] } };
    const two = 'Move the .log and .txt files into logs/.';
    expect(commands(movesForCommands([tidy], [run('mv app.py logs/')], listing, two))).toEqual(['mv app.py logs/']);
    // A dotfile is a file, not a kind.
    const env = ['.env', 'prod.env', 'app.py'];
    const dot = { id: 's1', instruction: 'Move .env into config/.', expect: { changes: ['config/'] } };
    expect(commands(movesForCommands([dot], [run('mv app.py config/')], env, 'Move .env into config/.'))).toEqual([
      'mv app.py config/',
    ]);
    // Nor without a listing.
    expect(commands(movesForCommands([folderStep], [run('mv app.py logs/')], null, request))).toEqual([
      'mv app.py logs/',
    ]);
  });

  it('-t names where the files go; names a shell would read are quoted', () => {
    const r = movesForCommands([folderStep], [run('mv -t logs app.py')], listing, request);
    expect(commands(r)).toEqual([LOGS_MOVED]);
    const step = { id: 's1', instruction: "Move it's.png into img/.", expect: { changes: ["img/it's.png"] } };
    const odd = movesForCommands(
      [step],
      [run('git mv app.py img/')],
      ["it's.png", 'app.py'],
      "Move it's.png into img/."
    );
    expect(commands(odd)).toEqual([moveCommand([{ from: "it's.png", to: "img/it's.png" }], 'git mv')]);
    expect(commands(odd)[0]).toBe("mkdir -p -- 'img' && git mv -- 'it'\\''s.png' 'img/it'\\''s.png'");
  });
});

describe('a plan that moves a file of another kind among those of the kind the step moves', () => {
  const files = ['app.py', 'debug.log', 'notes.txt', 'server.log'];
  const request = 'Move the .log files into logs/.';
  const moving = (changes: string[], instruction = 'Move all .log files into logs/.') =>
    plan([step('s1', instruction, { expect: { changes } })]);

  it('leaves that file out of the step, with a repair', () => {
    const r = movesOfOtherKinds(moving(['logs/debug.log', 'logs/notes.txt', 'logs/server.log']), request, files);
    expect(r.plan.steps[0].expect).toEqual({ changes: ['logs/debug.log', 'logs/server.log'] });
    expect(r.repairs).toEqual([
      'step "s1": expect.changes named logs/notes.txt, copies of files of another kind than those it moves: left out',
    ]);
  });

  it('keeps it where the request names it or its kind, where the step has no kind, or where it would copy no more', () => {
    const both = moving(['logs/debug.log', 'logs/notes.txt']);
    expect(movesOfOtherKinds(both, 'Move the .log files and notes.txt into logs/.', files).plan).toEqual(both);
    const tidy = moving(['logs/debug.log', 'logs/notes.txt'], 'Tidy the top folder into logs/.');
    expect(movesOfOtherKinds(tidy, 'Move the .log and .py files into logs/.', files).plan).toEqual(tidy);
    const kinds = moving(['logs/debug.log', 'logs/notes.txt', 'logs/server.log']);
    expect(movesOfOtherKinds(kinds, 'Move the .log files into logs/ and the .txt files too.', files).plan).toEqual(
      kinds
    );
    const lone = moving(['logs/notes.txt'], 'Move notes.txt into logs/.');
    expect(movesOfOtherKinds(lone, request, files).plan).toEqual(lone);
    // One .log file left, whose name and kind the step does not name: it would no more be a copy, but a file written
    // from nothing. Where the step names the kind, it still is one.
    const one = moving(['logs/debug.log', 'logs/notes.txt'], 'Move them into logs/.');
    expect(movesOfOtherKinds(one, request, files).plan).toEqual(one);
    const ofKind = moving(['logs/debug.log', 'logs/notes.txt']);
    expect(movesOfOtherKinds(ofKind, request, files).plan.steps[0].expect).toEqual({ changes: ['logs/debug.log'] });
  });
});

describe('a lone planned file that mirrors one of the kind its step names', () => {
  it('is a copy: the step copies or moves it, and a write aimed at it copies the file', () => {
    const files = ['docs/intro.md', 'docs/setup.md', 'docs/logo.png', 'README.md'];
    const moving = {
      id: 's2',
      instruction: 'Move all the .md files from the docs/ directory to the docs/guide/ folder.',
      expect: { changes: ['docs/guide/intro.md'] },
    };
    expect(copiesFiles(moving, files)).toBe(true);
    // The control: a lone README.md of its own in a folder, for a step that names no kind, is a new file.
    expect(
      copiesFiles(
        { ...moving, instruction: 'Write a README for docs/.', expect: { changes: ['docs/README.md'] } },
        files
      )
    ).toBe(false);
    const write: PickedCall = {
      ...run('x', 's2'),
      tool: 'write_file',
      qualifiedName: 'workspace__write_file',
      args: { path: 'docs/guide/intro.md', content: '# made up' },
    };
    const r = copiesForWrites([moving], [write], workspace, files);
    expect(commands(r)).toEqual(["mkdir -p -- 'docs/guide' && cp -P -- 'docs/intro.md' 'docs/guide/intro.md'"]);
  });
});
