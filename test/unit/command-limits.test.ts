import path from 'node:path';
import {
  CommandCgroups,
  launchWithLimits,
  sweepCommandCgroups,
  type CgroupFs,
} from '../../tools/workspace/command-limits';

/** A cgroup file system in memory: directories, the files written, and how many processes each cgroup counts. */
function fakeCgroupFs() {
  const dirs = new Set<string>();
  const pids = new Map<string, number>();
  const fs: CgroupFs = {
    mkdir: (p) => void dirs.add(p),
    write: () => undefined,
    read: (p) => {
      if (p.endsWith('pids.current')) return String(pids.get(p.slice(0, -'/pids.current'.length)) ?? 0);
      if (p.endsWith('cgroup.procs')) return '';
      throw new Error(`ENOENT ${p}`);
    },
    rmdir: (p) => {
      if (pids.get(p)) throw new Error('EBUSY');
      dirs.delete(p);
    },
    list: (p) => [...dirs].filter((d) => path.dirname(d) === p).map((d) => path.basename(d)),
    // Every cgroup was made an hour ago, but those named "new".
    mtimeMs: (p) => Date.now() - (p.includes('new') ? 1000 : 3_600_000),
  };
  return { fs, dirs, pids };
}

describe('the pids cgroups of commands', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('gives each command a cgroup of its own and removes it once its last process is gone', () => {
    const { fs, dirs, pids } = fakeCgroupFs();
    const cgroups = new CommandCgroups(10, 'cmd-test', fs);
    const a = cgroups.take()!;
    const b = cgroups.take()!;
    expect(a.procs).not.toBe(b.procs);
    expect(dirs.size).toBe(2);

    const [dirA] = [...dirs];
    pids.set(dirA, 1);
    a.dispose();
    expect(dirs.has(dirA)).toBe(true);
    pids.set(dirA, 0);
    jest.advanceTimersByTime(100);
    expect(dirs.has(dirA)).toBe(false);

    b.dispose();
    expect(dirs.size).toBe(0);
  });

  it('removes a cgroup still waiting for its last process when the server closes', async () => {
    const { fs, dirs, pids } = fakeCgroupFs();
    const cgroups = new CommandCgroups(10, 'cmd-test', fs);
    const a = cgroups.take()!;
    const [dir] = [...dirs];
    pids.set(dir, 1);
    a.dispose();
    pids.set(dir, 0);
    await cgroups.close();
    expect(dirs.size).toBe(0);
  });

  it('keeps looking, and killing, on a busy machine where the last processes take seconds to exit', () => {
    const { fs, dirs, pids } = fakeCgroupFs();
    const kills: string[] = [];
    const cgroups = new CommandCgroups(10, 'cmd-test', {
      ...fs,
      read: (p) => (p.endsWith('cgroup.procs') ? (kills.push(p), '') : fs.read(p)),
    });
    const a = cgroups.take()!;
    const [dir] = [...dirs];
    pids.set(dir, 2);
    a.dispose();
    jest.advanceTimersByTime(5_000);
    expect(dirs.has(dir)).toBe(true);
    // A process forked while the first kill read the list is killed on a later look.
    expect(kills.length).toBeGreaterThan(1);
    pids.set(dir, 0);
    jest.advanceTimersByTime(1_000);
    expect(dirs.size).toBe(0);
  });

  it('closing kills what still runs and waits for it to exit before removing the cgroups', async () => {
    jest.useRealTimers();
    const { fs, dirs, pids } = fakeCgroupFs();
    const cgroups = new CommandCgroups(10, 'cmd-test', {
      ...fs,
      // Each kill takes one process off, as an exiting process does a moment later.
      read: (p) => {
        if (p.endsWith('cgroup.procs'))
          pids.set(
            p.slice(0, -'/cgroup.procs'.length),
            Math.max(0, (pids.get(p.slice(0, -'/cgroup.procs'.length)) ?? 0) - 1)
          );
        return fs.read(p);
      },
    });
    cgroups.take(); // still running: never disposed
    const [dir] = [...dirs];
    pids.set(dir, 3);
    await cgroups.close();
    expect(dirs.size).toBe(0);
  });
});

describe('the cgroups of servers that are gone', () => {
  it("are removed when a server starts if empty; a live server's, or one holding a process, stay", () => {
    const { fs, dirs, pids } = fakeCgroupFs();
    const parent = '/cg/klea';
    for (const d of ['cmd-100-aa-1', 'cmd-100-aa-2', 'cmd-200-bb-1', 'cmd-300-cc-1', 'cmd-400-new-1', 'other'])
      dirs.add(`${parent}/${d}`);
    pids.set(`${parent}/cmd-100-aa-2`, 1);
    const removed = sweepCommandCgroups((pid) => pid === 200, fs, parent);
    expect(removed).toEqual(['cmd-100-aa-1', 'cmd-300-cc-1']);
    // One made a moment ago may be about to be joined (a server in another PID namespace): it stays too.
    expect([...dirs].map((d) => path.basename(d)).sort()).toEqual([
      'cmd-100-aa-2',
      'cmd-200-bb-1',
      'cmd-400-new-1',
      'other',
    ]);
    expect(sweepCommandCgroups(() => false, fs, '/nowhere')).toEqual([]);
  });
});

describe('the launch around bubblewrap', () => {
  const limits = { maxProcesses: 10, memoryBytes: 256 * 1024 * 1024, fileBytes: 1024 * 1024 };
  const sandboxed = ['/usr/bin/bwrap', '--unshare-all', '--', '/bin/sh', '-c', 'make'];

  it('joins the cgroup and takes the memory and file-size caps before it becomes bubblewrap', () => {
    const cgroup = {
      procs: '/sys/fs/cgroup/pids/klea/x/cgroup.procs',
      killAll() {},
      isEmpty: () => true,
      dispose() {},
    };
    const launch = launchWithLimits(sandboxed, { limits, cgroup });
    expect(launch.file).toBe('/bin/sh');
    expect(launch.args.slice(2, 5)).toEqual([cgroup.procs, '262144', '2048']);
    expect(launch.args[1]).toMatch(/trap "" XFSZ/);
    expect(launch.args.slice(5)).toEqual(sandboxed);
  });

  it('without a cgroup, prlimit sets the memory, process and file-size caps (SIGXFSZ ignored)', () => {
    const launch = launchWithLimits(sandboxed, { limits, cgroup: null });
    expect([launch.file, ...launch.args]).toEqual([
      '/bin/sh',
      '-c',
      'trap "" XFSZ; exec "$@"',
      'sh',
      'prlimit',
      `--as=${limits.memoryBytes}`,
      '--nproc=10',
      '--fsize=1048576',
      '--',
      ...sandboxed,
    ]);
  });
});
