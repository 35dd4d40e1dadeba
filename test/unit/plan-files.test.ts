/**
 * The small profile's help with the files a plan is to change (activities/llm/plan-files.ts): decided by the plan's
 * structure, the listing and the file names in the texts, in any language.
 */
import { requestedNewFiles, thinkingSteps } from '../../activities/llm/plan-files';
import type { Plan } from '../../common/plan';
import { planOf, planStep } from '../support/plan-steps';

const step = planStep;
const changes = (p: Plan) => p.steps.map((s) => s.expect?.changes ?? []);

describe('a new file the request names is planned by some step', () => {
  const files = ['orders.csv', 'notes/a.txt'];

  it('goes to the step that names it, else the first tool step that is to change nothing and runs no check', () => {
    const named = planOf(
      step('s1', 'Read orders.csv.'),
      step('s2', 'Write top.py to print the top customer.'),
      step('s3', 'Run it.', { expect: { check: 'python3 top.py' } })
    );
    expect(changes(requestedNewFiles(named, 'Write a script top.py that reads orders.csv.', files).plan)).toEqual([
      [],
      ['top.py'],
      [],
    ]);

    const unnamed = planOf(
      step('s1', 'Think it over.', { needs_tool: false }),
      step('s2', 'Copy the .txt files from notes/ into backup/.', { expect: { check: 'ls backup' } }),
      step('s3', 'Only .txt files.')
    );
    const out = requestedNewFiles(unnamed, 'Write me a bash script called backup.sh that copies notes/*.txt.', files);
    expect(changes(out.plan)).toEqual([[], [], ['backup.sh']]);
    expect(out.repairs).toEqual(['step "s3": the request names the new file backup.sh, which no step was to create']);
  });

  it('adds nothing the plan has, nothing that exists, and nothing for a question, in any script', () => {
    const p = planOf(step('s1', 'Write it.', { expect: { changes: ['top.py'] } }));
    expect(requestedNewFiles(p, 'Write top.py from orders.csv.', files).repairs).toEqual([]);
    const q = planOf(step('s1', 'Look.'));
    expect(requestedNewFiles(q, 'Why does main.py import helpers.py?', files).repairs).toEqual([]);
    expect(requestedNewFiles(q, 'helpers.py 在哪里？', files).repairs).toEqual([]);
    // The control: put as a request, the same file is planned.
    expect(changes(requestedNewFiles(q, 'Create helpers.py.', files).plan)).toEqual([['helpers.py']]);
  });
});

describe('a step that works over other steps’ results and names no file needs no tool', () => {
  const files = ['users.json', 'src/app.py'];
  const tools = (p: Plan) => p.steps.map((s) => s.needs_tool);

  it('after a step that names a file, and after such a step in turn, in any order the plan lists them', () => {
    const p = planOf(
      step('s3', 'Zähle sie.', { depends_on: ['s2'] }),
      step('s1', 'Read users.json.'),
      step('s2', 'Filter the list to the active ones.', { depends_on: ['s1'] })
    );
    const out = thinkingSteps(p, files);
    expect(tools(out.plan)).toEqual([false, true, false]);
    expect(out.repairs).toEqual([
      'step "s3" works over the results of s2 and names no file: no tool',
      'step "s2" works over the results of s1 and names no file: no tool',
    ]);
  });

  it('not one that names a file, expects changes or a check, depends on nothing, or follows a step that names none', () => {
    const p = planOf(
      step('s1', 'Read users.json.'),
      step('s2', 'Edit src/app.py to match.', { depends_on: ['s1'] }),
      step('s3', 'Save the count.', { depends_on: ['s1'], expect: { changes: ['count.txt'] } }),
      step('s4', 'Run the tests.', { depends_on: ['s1'], expect: { check: 'pytest' } }),
      step('s5', 'Search the code for TODOs.'),
      step('s6', 'Search again, wider.', { depends_on: ['s5'] })
    );
    const out = thinkingSteps(p, files);
    expect(tools(out.plan)).toEqual([true, true, true, true, true, true]);
    expect(out.repairs).toEqual([]);
  });
});
