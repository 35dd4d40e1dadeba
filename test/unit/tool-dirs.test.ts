/** Toolchain directories in the command sandbox (tools/workspace/tool-dirs.ts, runtime/tool-dirs.ts). */
import { bubblewrapArgs, SANDBOX_PATH } from '../../tools/workspace/bubblewrap-policy';
import { sandboxPath, toolDirProblem } from '../../tools/workspace/tool-dirs';
import { expandHome, toolDirEnv } from '../../runtime/tool-dirs';

const home = '/home/ada';
const project = '/home/ada/code/shop';

describe('tool directories', () => {
  it('`~` is the home directory', () => {
    expect(expandHome('~/.pyenv', home)).toBe('/home/ada/.pyenv');
    expect(expandHome('~', home)).toBe(home);
    expect(expandHome('/opt/tools', home)).toBe('/opt/tools');
  });

  it('a toolchain folder may be one; the home, above it, a credential folder or the project may not', () => {
    expect(toolDirProblem('/home/ada/.pyenv', home, project)).toBeNull();
    expect(toolDirProblem('/opt/node', home, project)).toBeNull();
    expect(toolDirProblem('.pyenv', home, project)).toMatch(/not an absolute path/);
    for (const d of ['/', '/home', home]) expect(toolDirProblem(d, home, project)).toMatch(/holds the home directory/);
    for (const d of ['/home/ada/.ssh', '/home/ada/.config/gh', '/home/ada/.aws'])
      expect(toolDirProblem(d, home, project)).toMatch(/credentials/);
    for (const d of ['/home/ada/code', project, '/home/ada/code/shop/.venv'])
      expect(toolDirProblem(d, home, project)).toMatch(/overlaps the project/);
    // A folder whose name only begins like the project's is another folder.
    expect(toolDirProblem('/home/ada/code/shop-tools', home, project)).toBeNull();
  });

  it("the worker's PATH entries in a tool directory come first, in its order; the rest of its PATH is left out", () => {
    const worker = '/home/ada/.cargo/bin:/home/ada/.pyenv/shims:/home/ada/bin:/usr/bin:/home/ada/.pyenv/bin';
    expect(sandboxPath(worker, ['/home/ada/.pyenv'])).toBe(
      `/home/ada/.pyenv/shims:/home/ada/.pyenv/bin:${SANDBOX_PATH}`
    );
    expect(sandboxPath(worker, [])).toBe(SANDBOX_PATH);
    expect(sandboxPath(undefined, ['/home/ada/.pyenv'])).toBe(SANDBOX_PATH);
  });

  it("the worker's variables that point into a tool directory go with it; others and PATH do not", () => {
    const env = {
      PYENV_ROOT: '/home/ada/.pyenv',
      NVM_DIR: '/home/ada/.nvm',
      EDITOR: 'vim',
      SOME_DIR: '/home/ada/.pyenv-other',
      PATH: '/home/ada/.pyenv/shims',
    };
    expect(toolDirEnv(env, ['~/.pyenv'], home)).toEqual({ PYENV_ROOT: '/home/ada/.pyenv' });
  });

  it('each is bound read-only at its own path, after the system and before the project', () => {
    const args = bubblewrapArgs(
      {
        projectDir: project,
        cwd: project,
        grants: [],
        hidden: [],
        pinned: [],
        readOnly: [],
        scratchBytes: 64 * 1024 * 1024,
        network: false,
        env: {},
        files: { passwd: '/p', group: '/g', empty: '/e' },
        toolDirs: ['/home/ada/.pyenv', '/gone'],
      },
      (p) => p !== '/gone'
    );
    const at = args.findIndex((a, i) => a === '--ro-bind' && args[i + 1] === '/home/ada/.pyenv');
    expect(args.slice(at, at + 3)).toEqual(['--ro-bind', '/home/ada/.pyenv', '/home/ada/.pyenv']);
    expect(at).toBeLessThan(args.indexOf('--bind'));
    expect(args).not.toContain('/gone');
  });
});
