/** The small profile's run of the failing check before a fix (activities/llm/reproduce.ts). */
import { reproducesFirst } from '../../activities/llm/reproduce';
import { describeTool } from '../../common/tools';

const tool = (name: string) =>
  describeTool('workspace', { name, description: name, inputSchema: { type: 'object', properties: {} } });
const tools = ['read_file', 'write_file', 'run_command'].map(tool);
const files = ['slug.js', 'test/slug.test.js', 'cleanup.sh', 'package.json'];
const commands = (steps: Parameters<typeof reproducesFirst>[1], offered = tools) =>
  reproducesFirst(offered, steps, files).map((c) => [c.stepId, c.args.command]);

describe('small profile: a fix first runs the check that is to pass once it is made', () => {
  it("runs a later step's check that runs a file the step does not change, without a pick", () => {
    const fix = { id: 's1', expect: { changes: ['slug.js'] }, laterChecks: ['node test/slug.test.js'] };
    expect(commands([fix])).toEqual([['s1', 'node test/slug.test.js']]);
    const [call] = reproducesFirst(tools, [fix], files);
    expect(call).toMatchObject({ qualifiedName: 'workspace__run_command' });
    expect(call.stepDone).toBe(false);
    // Its own check, too.
    expect(commands([{ id: 's1', expect: { changes: ['slug.js'], check: 'node test/slug.test.js' } }])).toEqual([
      ['s1', 'node test/slug.test.js'],
    ]);
  });

  it('never runs the script the step is to fix, a check naming files not there, a pipe, or a check naming no file', () => {
    const fix = (laterChecks: string[]) => ({ id: 's1', expect: { changes: ['cleanup.sh'] }, laterChecks });
    expect(commands([fix(['bash cleanup.sh'])])).toEqual([]);
    expect(commands([fix(['node test/other.test.js'])])).toEqual([]);
    expect(commands([fix(['node test/slug.test.js | tail -3'])])).toEqual([]);
    expect(commands([fix(['npm test'])])).toEqual([]);
    // Control: the same step with a test of another file runs it.
    expect(commands([fix(['node test/slug.test.js'])])).toEqual([['s1', 'node test/slug.test.js']]);
  });

  it('only for a step that changes files the project has, before its first call, where commands run', () => {
    const later = ['node test/slug.test.js'];
    expect(commands([{ id: 's1', expect: { changes: ['new.js'] }, laterChecks: later }])).toEqual([]);
    expect(commands([{ id: 's1', laterChecks: later }])).toEqual([]);
    const fix = { id: 's1', expect: { changes: ['slug.js'] }, laterChecks: later };
    expect(commands([{ ...fix, earlierCalls: [{}] }])).toEqual([]);
    expect(commands([{ ...fix, notDone: 'the check failed' }])).toEqual([]);
    expect(commands([fix], tools.slice(0, 2))).toEqual([]);
    expect(reproducesFirst(tools, [fix], null)).toEqual([]);
  });
});
