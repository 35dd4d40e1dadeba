import { z } from 'zod';
import { describeZodIssues, formatZodIssues } from '../../common/zod-issues';

describe('describeZodIssues: one formatter, worded the way each caller words it', () => {
  const Body = z.strictObject({ decision: z.enum(['approve', 'revise']), nested: z.strictObject({ a: z.number() }) });
  const failure = (value: unknown, schema: z.ZodType = Body) => {
    const result = schema.safeParse(value);
    if (result.success) throw new Error('expected the value to be refused');
    return result.error;
  };

  it('the API: prefixed paths, one "unknown field" per unknown key', () => {
    const error = failure({ decision: 'maybe', nested: { a: 1, b: 2 }, colour: 'red' });

    const described = describeZodIssues(error, { prefix: ['body'], unknownKeys: 'per_field' });

    expect(described).toEqual([
      { path: 'body.decision', message: expect.stringMatching(/approve/) },
      { path: 'body.nested.b', message: 'unknown field' },
      { path: 'body.colour', message: 'unknown field' },
    ]);
  });

  it('a config file: unknown keys grouped per object, an issue about the whole value named as such', () => {
    const grouped = describeZodIssues(failure({ decision: 'approve', nested: { a: 1 }, x: 1, y: 2 }), {
      whole: '(top level)',
      unknownKeys: 'grouped',
    });
    const whole = describeZodIssues(failure('not an object'), { whole: '(top level)' });

    expect(grouped).toEqual([{ path: '(top level)', message: 'unknown keys "x", "y"' }]);
    expect(whole).toEqual([{ path: '(top level)', message: expect.any(String) }]);
  });

  it('a bad record key is explained when asked, and left in zod words otherwise', () => {
    const Servers = z.record(
      z.string().refine((k) => k !== 'workspace', 'that name is taken'),
      z.number()
    );
    const error = failure({ workspace: 1 }, Servers);

    expect(describeZodIssues(error, { recordKeys: 'explain' })[0].message).toBe('bad name: that name is taken');
    expect(describeZodIssues(error)[0].message).toBe(error.issues[0].message);
  });

  it('a workflow message: zod words, joined with "; ", the payload named when the issue has no path', () => {
    const error = failure({ decision: 'maybe', nested: {} });

    expect(formatZodIssues(error, { whole: 'input' })).toMatch(/^decision: .+; nested\.a: .+$/);
    expect(formatZodIssues(failure(42), { whole: 'input' })).toMatch(/^input: /);
  });
});
