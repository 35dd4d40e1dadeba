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
    pinned: ['/p/.git'],
    readOnly: ['/p/.git/hooks', '/p/.git/config', '/p/.vscode'],
    scratchBytes: 512 * 1024 * 1024,
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

  it('binds protected files read-only in a pinned .git, after the project and before what is hidden', () => {
    const args = bubblewrapArgs(policy, everything);
    const at = (...xs: string[]) => args.findIndex((_, i) => xs.every((x, j) => args[i + j] === x));
    expect(at('--bind', '/p/.git', '/p/.git')).toBeGreaterThan(at('--bind', '/p', '/p'));
    expect(at('--ro-bind', '/p/.git/hooks', '/p/.git/hooks')).toBeGreaterThan(at('--bind', '/p/.git', '/p/.git'));
    expect(at('--ro-bind', '/p/.git/config', '/p/.git/config')).toBeGreaterThan(-1);
    expect(at('--ro-bind', '/s/empty', '/p/id_rsa')).toBeGreaterThan(at('--ro-bind', '/p/.vscode', '/p/.vscode'));
    // A grant to write a protected file opens it.
    const granted = bubblewrapArgs({ ...policy, grants: [{ path: '/p/.git/config', op: 'write' }] }, everything);
    expect(granted.join(' ')).not.toContain('--ro-bind /p/.git/config /p/.git/config');
  });

  it('sizes /tmp, HOME and /dev/shm to the memory cap together, and leaves the rest of the root read-only', () => {
    const args = bubblewrapArgs(policy, everything);
    const sizeOf = (mount: string) => {
      const i = args.findIndex((a, j) => a === '--tmpfs' && args[j + 1] === mount);
      expect(args[i - 2]).toBe('--size');
      return Number(args[i - 1]);
    };
    const total = sizeOf('/tmp') + sizeOf('/home/sandbox') + sizeOf('/dev/shm');
    expect(total).toBeLessThanOrEqual(512 * 1024 * 1024);
    expect(sizeOf('/tmp')).toBe(256 * 1024 * 1024);
    const at = (...xs: string[]) => args.findIndex((_, i) => xs.every((x, j) => args[i + j] === x));
    expect(at('--remount-ro', '/dev')).toBeGreaterThan(at('--tmpfs', '/dev/shm'));
    expect(at('--remount-ro', '/')).toBeGreaterThan(at('--tmpfs', '/p/.klea'));
    expect(at('--tmpfs', '/home')).toBe(-1);
  });

  it("never shares the host's network, on or off; name resolution files only when the session allows it", () => {
    expect(bubblewrapArgs(policy, everything)).not.toContain('--share-net');
    expect(bubblewrapArgs(policy, everything)).not.toContain('/etc/resolv.conf');
    const on = bubblewrapArgs({ ...policy, network: true }, everything);
    expect(on).toContain('--unshare-all');
    expect(on).not.toContain('--share-net');
    expect(on).toContain('/etc/resolv.conf');
  });

  it('gives every command a user namespace of its own in which no further one can be made; no /run, /var or tty', () => {
    const args = bubblewrapArgs(policy, everything);
    for (const a of ['--unshare-user', '--disable-userns', '--assert-userns-disabled', '--new-session', '--cap-drop'])
      expect(args).toContain(a);
    // The host's sockets (D-Bus, the resolver's, agents') live under /run and /var: neither is bound.
    expect(args.filter((a) => /^\/(run|var)(\/|$)/.test(a))).toEqual([]);
  });

  it("binds git's ignore file naming the placeholders into HOME, when there are any", () => {
    const args = bubblewrapArgs({ ...policy, gitIgnore: '/s/git-ignore-1' }, everything);
    const i = args.indexOf('/s/git-ignore-1');
    expect(args.slice(i - 1, i + 2)).toEqual(['--ro-bind', '/s/git-ignore-1', '/home/sandbox/.config/git/ignore']);
    expect(bubblewrapArgs(policy, everything).join(' ')).not.toContain('.config/git');
  });
});
