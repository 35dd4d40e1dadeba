import { movesForCommands, mentionedKinds, moveCommand, operandFiles } from '../../activities/llm/move-commands';
import type { PickedCall } from '../../common/tools';

const run = (command: string, stepId = 's1'): PickedCall => ({
  stepId,
  server: 'workspace',
  tool: 'run_command',
  qualifiedName: 'workspace__run_command',
  args: { command },
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
    expect(mentionedKinds('Rename config.yml to config.yaml, keep ./run.sh and logs/.')).toEqual([]);
  });
});

describe('a command that moves the wrong files moves those the plan does', () => {
  const listing = ['app.py', 'debug.log', 'notes.txt', 'server.log', 'worker.log', 'old/', 'old/x.log'];
  const request = 'There are .log files lying around in the top folder. Move them into a logs/ directory.';

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
    expect(commands(r)).toEqual([
      "mkdir -p -- 'logs' && mv -- 'debug.log' 'logs/debug.log' && mv -- 'server.log' 'logs/server.log' && " +
        "mv -- 'worker.log' 'logs/worker.log'",
    ]);
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

  it('a plan of the folder alone: the files of the kinds named, from the folder the command takes files from', () => {
    const step = { id: 's1', instruction: 'Move .log files into a logs/ directory', expect: { changes: ['logs/'] } };
    const r = movesForCommands([step], [run('mv app.py logs/')], listing, request);
    // old/x.log is in another folder than the one the model's command took from: it stays.
    expect(commands(r)).toEqual([
      "mkdir -p -- 'logs' && mv -- 'debug.log' 'logs/debug.log' && mv -- 'server.log' 'logs/server.log' && " +
        "mv -- 'worker.log' 'logs/worker.log'",
    ]);
  });

  it('the model says copy or move: a cp is made a copy', () => {
    const step = {
      id: 's1',
      instruction: 'Copy them.',
      expect: { changes: ['backup/debug.log', 'backup/server.log'] },
    };
    const r = movesForCommands([step], [run('cp app.py backup/')], listing, 'Copy the .log files into backup/.');
    expect(commands(r)).toEqual([
      "mkdir -p -- 'backup' && cp -P -- 'debug.log' 'backup/debug.log' && cp -P -- 'server.log' 'backup/server.log'",
    ]);
  });

  it('kept: a command that makes the moves already, one that neither moves nor copies, one of both, or no plan', () => {
    const step = { id: 's1', instruction: 'Move them.', expect: { changes: ['logs/debug.log', 'logs/server.log'] } };
    const kept = [
      run('mkdir -p logs && mv debug.log server.log logs/'),
      run('git mv debug.log logs/debug.log && git mv server.log logs/server.log'),
      run('mkdir logs'),
      run('cp debug.log a && mv app.py logs/'),
      run('mv app.py logs/', 's9'),
    ];
    expect(commands(movesForCommands([step], kept, listing, request))).toEqual(commands({ calls: kept }));
    // A plan that names no kinds and one folder: nothing to go by.
    const folder = { id: 's1', instruction: 'Tidy up.', expect: { changes: ['logs/'] } };
    const tidy = [run('mv app.py logs/')];
    expect(commands(movesForCommands([folder], tidy, listing, 'Tidy up the top folder into logs/.'))).toEqual([
      'mv app.py logs/',
    ]);
    // Nor without a listing.
    expect(commands(movesForCommands([step], tidy, null, request))).toEqual(['mv app.py logs/']);
  });

  it('globs are read as the shell reads them, from the project folder: a command that moves the files is kept', () => {
    expect(operandFiles('old/*.log', listing)).toEqual(['old/x.log']);
    expect(operandFiles('*.log', listing)).toEqual(['debug.log', 'server.log', 'worker.log']);
    expect(operandFiles('./app.py', listing)).toEqual(['app.py']);
    expect(operandFiles('gone.txt', listing)).toEqual([]);
    const step = { id: 's1', instruction: 'Move them.', expect: { changes: ['logs/'] } };
    expect(commands(movesForCommands([step], [run('mkdir logs && mv *.log logs/')], listing, request))).toEqual([
      'mkdir logs && mv *.log logs/',
    ]);
  });

  it('a git mv that takes a wrong file is made a mv of the right ones; names a shell would read are quoted', () => {
    const step = { id: 's1', instruction: "Move it's.png into img/.", expect: { changes: ["img/it's.png"] } };
    const r = movesForCommands([step], [run('git mv app.py img/')], ["it's.png", 'app.py'], "Move it's.png into img/.");
    expect(commands(r)).toEqual([moveCommand([{ from: "it's.png", to: "img/it's.png" }], 'mv')]);
    expect(commands(r)[0]).toBe("mkdir -p -- 'img' && mv -- 'it'\\''s.png' 'img/it'\\''s.png'");
  });
});
