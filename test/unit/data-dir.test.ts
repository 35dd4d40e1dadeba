/** Where Klea keeps its own data, and `make start PROJECT=<dir>`: resolved before anything starts. */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dataDir, dataPath, temporalDbFile } from '../../runtime/data-dir';
import { projectFlag, resolveProjectArg } from '../../runtime/project-arg';

describe("Klea's data directory", () => {
  it('is ~/.local/share/klea by default: outside any project Klea works on', () => {
    expect(dataDir({ HOME: '/home/ada' }, '/home/ada/code/app')).toBe('/home/ada/.local/share/klea');
  });

  it('follows XDG_DATA_HOME, and ignores a relative one as the XDG spec says', () => {
    expect(dataDir({ HOME: '/home/ada', XDG_DATA_HOME: '/data/ada' })).toBe('/data/ada/klea');
    expect(dataDir({ HOME: '/home/ada', XDG_DATA_HOME: 'rel/data' })).toBe('/home/ada/.local/share/klea');
  });

  it('is KLEA_DATA_DIR when set: relative to where Klea starts, ~ expanded', () => {
    const env = { HOME: '/home/ada', XDG_DATA_HOME: '/data/ada' };
    expect(dataDir({ ...env, KLEA_DATA_DIR: '/srv/klea' })).toBe('/srv/klea');
    expect(dataDir({ ...env, KLEA_DATA_DIR: 'state' }, '/opt/klea')).toBe('/opt/klea/state');
    expect(dataDir({ ...env, KLEA_DATA_DIR: '~/klea-data' })).toBe('/home/ada/klea-data');
  });

  it('holds the defaults of the data settings; an absolute setting stays where it is', () => {
    const env = { HOME: '/home/ada' };
    expect(dataPath('results', env)).toBe('/home/ada/.local/share/klea/results');
    expect(dataPath('workspace-state', { KLEA_DATA_DIR: '/srv/klea' })).toBe('/srv/klea/workspace-state');
    expect(dataPath('/var/lib/klea/results', env)).toBe('/var/lib/klea/results');
    expect(dataPath('~/results', env)).toBe('/home/ada/results');
  });

  it("holds make start's Temporal database unless KLEA_TEMPORAL_DB names another (relative to where it was set)", () => {
    expect(temporalDbFile({ KLEA_DATA_DIR: '/srv/klea' })).toBe('/srv/klea/temporal.db');
    expect(temporalDbFile({ KLEA_DATA_DIR: '/srv/klea', KLEA_TEMPORAL_DB: 'second.db' }, '/opt/klea')).toBe(
      '/opt/klea/second.db'
    );
  });
});

describe('make start PROJECT=<dir>', () => {
  let home: string;
  beforeAll(() => {
    home = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-project-arg-')));
    mkdirSync(path.join(home, 'code', 'app'), { recursive: true });
    writeFileSync(path.join(home, 'notes.txt'), 'not a project\n');
    symlinkSync(path.join(home, 'code', 'app'), path.join(home, 'app-link'));
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('comes from --project as start.js gets it from the Makefile', () => {
    expect(projectFlag(['--project', '~/code/app'])).toBe('~/code/app');
    expect(projectFlag(['--project=../app'])).toBe('../app');
    expect(projectFlag([])).toBeUndefined();
  });

  it('is resolved to an absolute real path: ~, relative and symlinked forms alike', () => {
    const app = path.join(home, 'code', 'app');
    expect(resolveProjectArg('~/code/app', { HOME: home })).toBe(app);
    expect(resolveProjectArg('app', {}, path.join(home, 'code'))).toBe(app);
    expect(resolveProjectArg(path.join(home, 'app-link'), {})).toBe(app);
  });

  it('that does not exist, or is a file, is refused with a message naming it', () => {
    expect(() => resolveProjectArg('~/code/missing', { HOME: home })).toThrow(
      `PROJECT=~/code/missing: no such directory (${path.join(home, 'code', 'missing')})`
    );
    expect(() => resolveProjectArg('notes.txt', {}, home)).toThrow(
      `PROJECT=notes.txt: not a directory (${path.join(home, 'notes.txt')})`
    );
    expect(() => resolveProjectArg('  ', {})).toThrow(/PROJECT is empty/);
  });
});
