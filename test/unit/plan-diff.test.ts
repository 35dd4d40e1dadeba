/** What a revised plan changed against the reviewed one: added, removed and changed steps by id. */
import { planDiff } from '../../common/plan-diff';
import { plan, step } from '../support/task-driver';

describe('planDiff', () => {
  it('names added, removed and changed steps, with the fields that changed', () => {
    const before = plan([
      step('s1', 'Read the file'),
      step('s2', 'Summarise', { needs_tool: false }),
      step('s3', 'Count'),
    ]);
    const after = plan(
      [
        step('s1', 'Read the file'),
        step('s2', 'Summarise in one line', { needs_tool: false, depends_on: ['s1'] }),
        step('s4', 'Write the summary to out.md'),
      ],
      {},
      'Summarise and save'
    );

    expect(planDiff(before, after)).toEqual({
      added: ['s4'],
      removed: ['s3'],
      changed: [{ stepId: 's2', fields: ['instruction', 'depends_on'] }],
      goalChanged: true,
    });
  });

  it('the same plan has no difference', () => {
    const p = plan([step('a', 'x', { questions: ['which?'] })]);

    expect(planDiff(p, structuredClone(p))).toEqual({ added: [], removed: [], changed: [], goalChanged: false });
  });

  it('a title, tool need or question change is named', () => {
    const before = plan([step('a', 'x', { title: 'A' }), step('b', 'y'), step('c', 'z')]);
    const after = plan([
      step('a', 'x', { title: 'A!' }),
      step('b', 'y', { needs_tool: false }),
      step('c', 'z', { questions: ['q?'] }),
    ]);

    expect(planDiff(before, after).changed).toEqual([
      { stepId: 'a', fields: ['title'] },
      { stepId: 'b', fields: ['needs_tool'] },
      { stepId: 'c', fields: ['questions'] },
    ]);
  });
});
