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
