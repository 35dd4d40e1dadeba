/** The order a pick offers tools in: the step's words first, what the step already called last; none removed. */
import { rankTools } from '../../activities/llm/nodes';
import type { ToolDescriptor } from '../../common/tools';

const tool = (name: string, description: string): ToolDescriptor =>
  ({
    server: 'workspace',
    name,
    qualifiedName: `workspace__${name}`,
    description,
    inputSchema: { type: 'object', properties: {} },
    readOnly: false,
    idempotent: false,
  }) as unknown as ToolDescriptor;

const tools = [
  tool('read_file', 'Read a text file in the project. Returns its lines.'),
  tool('write_file', 'Create or overwrite a file in the project with the given content. The write is atomic.'),
  tool('run_command', 'Run a shell command (/bin/sh -c) in the project directory. Use it to build, test or read.'),
];
const step = (instruction: string, earlierCalls: Array<{ tool: string }> = []) => ({
  id: 's1',
  title: 't',
  instruction,
  dependencyResults: [],
  earlierCalls: earlierCalls.map((c) => ({ ...c, args: {}, status: 'ok', text: '' })),
});
const names = (ts: ToolDescriptor[]) => ts.map((t) => t.name);

describe('tool ranking for a pick', () => {
  it('a step that creates a file is offered the tool that creates files first', () => {
    expect(names(rankTools(tools, [step('Create hello.py that prints hello world')]))[0]).toBe('write_file');
  });

  it('a step that runs something is offered the shell first; only the first sentence of a description counts', () => {
    expect(names(rankTools(tools, [step('Run the tests')]))[0]).toBe('run_command');
  });

  it('a step under way is offered what it has not called yet first, and every tool is still offered', () => {
    const ranked = names(rankTools(tools, [step('Read config.json', [{ tool: 'workspace__read_file' }])]));
    expect(ranked.at(-1)).toBe('read_file');
    expect([...ranked].sort()).toEqual(['read_file', 'run_command', 'write_file']);
  });

  it('with nothing in common the order stays as offered', () => {
    expect(names(rankTools(tools, [step('Zebra quagga')]))).toEqual(['read_file', 'write_file', 'run_command']);
  });
});

describe('tool ranking with what the prompt already holds', () => {
  const workspace = [
    tool('read_file', 'Read a text file in the project. Returns its lines.'),
    tool('list_dir', 'List the entries of a directory in the project.'),
    tool('grep', 'Search the files for a regular expression: find which file defines or mentions something.'),
    tool('edit_file', 'Change a file by replacing an exact string in it: fix a bug, set, add or rename something.'),
    tool('run_command', 'Run a shell command in the project: run a script or the tests, count lines (wc -l).'),
  ];
  const shown = (instruction: string) => ({ ...step(instruction), files: [{ path: 'calc.py', text: 'x' }] });

  it('a step whose named files are shown is offered reading last: they are in the prompt', () => {
    const ranked = names(rankTools(workspace, [shown('Read calc.py and fix the bug')]));
    expect(ranked[0]).toBe('edit_file');
    expect(ranked.at(-1)).toBe('read_file');
  });

  it('a step whose files are not shown may still read first', () => {
    expect(names(rankTools(workspace, [step('Read calc.py')]))[0]).toBe('read_file');
  });

  it('listing tools go last when the whole listing is in the prompt, and not otherwise', () => {
    expect(names(rankTools(workspace, [step('List the entries')]))[0]).toBe('list_dir');
    expect(names(rankTools(workspace, [step('List the entries')], { listingComplete: true })).at(-1)).toBe('list_dir');
  });

  it("the goal's words count beside the instruction's, and stems match (changes, changed, change)", () => {
    expect(names(rankTools(workspace, [step('Look at it')], { goal: 'Which file defines Circle?' }))[0]).toBe('grep');
    expect(names(rankTools(workspace, [step('How many lines are in data.txt?')]))[0]).toBe('run_command');
    expect(names(rankTools([tool('a', 'Read.'), tool('b', 'Changes a value.')], [step('change it')]))[0]).toBe('b');
  });
});
