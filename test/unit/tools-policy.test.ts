import { accessRefusal, describeTool, offeredTools, toolRetryPolicy } from '../../common/tools';

const tool = (name: string, annotations?: Record<string, boolean>) =>
  describeTool('srv', { name, inputSchema: { type: 'object' }, annotations });

describe('tool policy', () => {
  const read = tool('read', { readOnlyHint: true });
  const write = tool('write', { destructiveHint: true, idempotentHint: true });
  const unannotated = tool('mystery');
  const command = tool('run', { readOnlyHint: false, idempotentHint: false });

  it('a missing readOnlyHint means the tool writes', () => {
    expect(unannotated.readOnly).toBe(false);
    expect(offeredTools([read, write, unannotated, command], 'read_only').map((t) => t.name)).toEqual(['read']);
    expect(offeredTools([read, write, unannotated, command], 'full')).toHaveLength(4);
  });

  it('refuses non-read-only tools at dispatch under read_only, and unknown tools always', () => {
    expect(accessRefusal(write, 'read_only', 'srv__write')).toMatch(/read_only/);
    expect(accessRefusal(unannotated, 'read_only', 'srv__mystery')).toMatch(/read_only/);
    expect(accessRefusal(read, 'read_only', 'srv__read')).toBeNull();
    expect(accessRefusal(write, 'full', 'srv__write')).toBeNull();
    expect(accessRefusal(undefined, 'full', 'srv__nope')).toBe('no tool named srv__nope is available');
  });

  it('retries read-only and idempotent tools on transport failure; attempts the others once', () => {
    expect(toolRetryPolicy(read).maximumAttempts).toBeGreaterThan(1);
    expect(toolRetryPolicy(write).maximumAttempts).toBeGreaterThan(1);
    expect(toolRetryPolicy(unannotated).maximumAttempts).toBe(1);
    expect(toolRetryPolicy(command).maximumAttempts).toBe(1);
    // The workspace server records writes and edits by idempotency key: retrying them cannot act twice.
    expect(
      toolRetryPolicy({ server: 'workspace', tool: 'edit_file', idempotent: false }).maximumAttempts
    ).toBeGreaterThan(1);
    expect(toolRetryPolicy({ server: 'workspace', tool: 'run_command', idempotent: false }).maximumAttempts).toBe(1);
  });

  it('names functions <server>__<tool> within the function-name alphabet', () => {
    expect(describeTool('my-server', { name: 'do.thing/now', inputSchema: {} }).qualifiedName).toBe(
      'my-server__do_thing_now'
    );
  });
});
