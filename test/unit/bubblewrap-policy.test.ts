import { bubblewrapArgs, type SandboxPolicy } from '../../tools/workspace/bubblewrap-policy';

describe('the bubblewrap policy', () => {
  const policy: SandboxPolicy = {
    projectDir: '/p',
    cwd: '/p/src',
    grants: [
      { path: '/elsewhere', op: 'read' },
      { path: '/p/.env', op: 'read' },
    ],
    hidden: [
      { path: '/p/.env', dir: false },
      { path: '/p/id_rsa', dir: false },
      { path: '/p/.klea', dir: true },
    ],
    network: false,
    env: { PATH: '/usr/bin' },
    files: { passwd: '/s/passwd', group: '/s/group', empty: '/s/empty' },
  };
  const everything = () => true;

  it('covers hidden files after every bind, except what the user granted', () => {
    const args = bubblewrapArgs(policy, everything);
    const at = (...xs: string[]) => args.findIndex((_, i) => xs.every((x, j) => args[i + j] === x));
    expect(at('--bind', '/p', '/p')).toBeGreaterThan(-1);
    expect(at('--ro-bind', '/elsewhere', '/elsewhere')).toBeGreaterThan(at('--bind', '/p', '/p'));
    expect(at('--ro-bind', '/s/empty', '/p/id_rsa')).toBeGreaterThan(at('--ro-bind', '/elsewhere', '/elsewhere'));
    expect(at('--tmpfs', '/p/.klea', '--remount-ro', '/p/.klea')).toBeGreaterThan(-1);
    expect(at('--ro-bind', '/s/empty', '/p/.env')).toBe(-1);
  });

  it("never shares the host's network, on or off; name resolution files only when the session allows it", () => {
    expect(bubblewrapArgs(policy, everything)).not.toContain('--share-net');
    expect(bubblewrapArgs(policy, everything)).not.toContain('/etc/resolv.conf');
    const on = bubblewrapArgs({ ...policy, network: true }, everything);
    expect(on).toContain('--unshare-all');
    expect(on).not.toContain('--share-net');
    expect(on).toContain('/etc/resolv.conf');
  });
});
