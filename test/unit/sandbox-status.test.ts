import { sandboxNote, sandboxOfIdentity, sandboxWhyOfIdentity, workerIdentity } from '../../common/sandbox-status';

describe('the sandbox status a worker carries in its identity', () => {
  it('is read back as written', () => {
    for (const status of ['on', 'off', 'unavailable'] as const)
      expect(sandboxOfIdentity(workerIdentity('4242@host-a', status))).toBe(status);
  });

  it('carries why commands are refused, on one short line, and only then', () => {
    const id = workerIdentity('4242@host-a', 'unavailable', 'bwrap: Unknown option --disable-userns\n\u001b[31m');
    expect(sandboxOfIdentity(id)).toBe('unavailable');
    expect(sandboxWhyOfIdentity(id)).toBe('bwrap: Unknown option --disable-userns [31m');
    expect(sandboxWhyOfIdentity(workerIdentity('4242@host-a', 'on', 'ignored'))).toBeNull();
    expect(workerIdentity('1@h', 'unavailable', 'x'.repeat(500)).length).toBeLessThan(200);
  });

  it('is unknown for a worker that does not say, or says something else', () => {
    expect(sandboxOfIdentity('4242@host-a')).toBeNull();
    expect(sandboxOfIdentity('4242@host-a sandbox=maybe')).toBeNull();
    expect(sandboxOfIdentity(undefined)).toBeNull();
  });

  it('gives people a note only when commands do not run sandboxed', () => {
    expect(sandboxNote({ status: 'on', problem: null })).toBeNull();
    expect(sandboxNote({ status: 'off', problem: null })).toMatch(/WITHOUT the sandbox/);
    expect(sandboxNote({ status: 'unavailable', problem: 'bubblewrap is not installed' })).toBe(
      'commands are refused: bubblewrap is not installed'
    );
  });
});
