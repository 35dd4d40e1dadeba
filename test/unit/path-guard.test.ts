/**
 * The path guard against attacks. Each case is named after the attack it stops and asserts the classification
 * of a real file-system fixture (symlinks included).
 */
import { linkSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_PROTECTED_PATTERNS, DEFAULT_SENSITIVE_PATTERNS } from '../../common/path-patterns';
import { commandPathTokens, extractPathCandidates } from '../../common/path-candidates';
import { protectedAnchor, ProtectedMatcher, SensitiveMatcher, type PathClass } from '../../common/path-guard';
import { isWithin, normalize, parentFolders } from '../../common/posix-path';
import { globMatch } from '../../common/glob';
import { guardToolCall, resolvePath } from '../../runtime/path-resolve';

let base: string;
let root: string;
let home: string;

function touch(p: string, content = 'x') {
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, content);
}

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-guard-')));
  root = path.join(base, 'proj');
  home = path.join(base, 'home');
  touch(path.join(root, 'src/app.ts'));
  touch(path.join(root, 'README.md'));
  touch(path.join(root, '.env'), 'SECRET=1');
  touch(path.join(root, '.env.local'));
  touch(path.join(root, 'config/.env.production'));
  touch(path.join(root, 'deep/a/b/.ssh/id_rsa'));
  touch(path.join(root, 'keys/server.pem'));
  touch(path.join(root, 'node_modules/real-pkg/index.js'));
  touch(path.join(base, 'outside/secret.txt'), 'canary');
  touch(path.join(base, 'outside/pkg/index.js'));
  touch(path.join(base, 'proj-evil/secret.txt'));
  touch(path.join(home, '.ssh/id_rsa'));
  symlinkSync('../outside', path.join(root, 'link-out'));
  symlinkSync('../outside/secret.txt', path.join(root, 'link-secret'));
  symlinkSync('src/app.ts', path.join(root, 'link-in'));
  symlinkSync('loop-b', path.join(root, 'loop-a'));
  symlinkSync('loop-a', path.join(root, 'loop-b'));
  symlinkSync('self', path.join(root, 'self'));
  symlinkSync('../outside/not-yet.txt', path.join(root, 'dangling-out'));
  symlinkSync(path.join(base, 'outside'), path.join(root, 'parentlink'));
  symlinkSync('../../outside/pkg', path.join(root, 'node_modules/pkg'));
  symlinkSync('.env', path.join(root, 'notes.txt'));
  symlinkSync('/etc', path.join(root, 'etc-link'));
  linkSync(path.join(base, 'outside/secret.txt'), path.join(root, 'hardlinked.txt'));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

async function classify(args: Record<string, unknown>, opts: { tool?: string; readOnly?: boolean } = {}) {
  const results = await guardToolCall(
    { server: 'workspace', tool: opts.tool ?? 'read_file', args, readOnly: opts.readOnly ?? true },
    { projectDir: root, sensitivePatterns: DEFAULT_SENSITIVE_PATTERNS, homeDir: home }
  );
  return results;
}
async function classOf(p: string): Promise<PathClass> {
  const [r] = await classify({ path: p });
  return r.class;
}

describe('path guard: attacks', () => {
  const cases: Array<[string, () => string, PathClass]> = [
    ['plain relative file is inside', () => 'src/app.ts', 'inside'],
    ['a new file in the project is inside', () => 'src/new/file.ts', 'inside'],
    ['the project directory itself is inside', () => '.', 'inside'],
    ['dot-dot traversal to a sibling directory', () => '../outside/secret.txt', 'outside'],
    ['dot-dot traversal from a subdirectory', () => 'src/../../outside/secret.txt', 'outside'],
    ['dot-dot that stays inside is inside', () => 'src/../README.md', 'inside'],
    ['deep dot-dot climbing to the file-system root', () => '../../../../../../../../etc/passwd', 'outside'],
    ['absolute path inside the project', () => path.join(root, 'src/app.ts'), 'inside'],
    ['absolute path outside (/etc/passwd)', () => '/etc/passwd', 'outside'],
    ['absolute path through the root then dot-dot', () => `${root}/../outside/secret.txt`, 'outside'],
    ['slash-dot-dot is the file-system root', () => '/..', 'outside'],
    ['home directory shortcut ~', () => '~', 'outside'],
    ['home ssh key via ~/.ssh/id_rsa', () => '~/.ssh/id_rsa', 'outside'],
    ["another user's home via ~root", () => '~root/.bashrc', 'outside'],
    ['sibling-prefix attack: /proj-evil is not /proj', () => path.join(base, 'proj-evil/secret.txt'), 'outside'],
    ['sibling-prefix attack through dot-dot', () => '../proj-evil/secret.txt', 'outside'],
    ['symlinked directory leading outside', () => 'link-out/secret.txt', 'outside'],
    ['symlinked file leading outside', () => 'link-secret', 'outside'],
    ['symlink that stays inside is inside', () => 'link-in', 'inside'],
    ['symlinked parent of a new file', () => 'parentlink/new-file.txt', 'outside'],
    ['dangling symlink whose target is outside', () => 'dangling-out', 'outside'],
    ['absolute symlink to /etc', () => 'etc-link/hostname', 'outside'],
    ['symlink loop between two links', () => 'loop-a', 'outside'],
    ['self-referencing symlink', () => 'self/x', 'outside'],
    ['link/.. is the link target parent, not the project', () => 'link-out/../outside/secret.txt', 'outside'],
    ['null byte truncation', () => 'README.md\0../../outside/secret.txt', 'outside'],
    ['URL-encoded dot-dot', () => '%2e%2e/outside/secret.txt', 'outside'],
    ['URL-encoded slash and dot-dot', () => '..%2foutside%2fsecret.txt', 'outside'],
    ['double URL-encoded dot-dot', () => '%252e%252e/outside/secret.txt', 'outside'],
    ['file:// URI outside', () => 'file:///etc/passwd', 'outside'],
    ['file:// URI inside is inside', () => `file://${root}/src/app.ts`, 'inside'],
    ['file:// URI with encoded traversal', () => `file://${root}/%2e%2e/outside/secret.txt`, 'outside'],
    ['file:// URI on a remote host', () => 'file://evil.example/etc/passwd', 'outside'],
    ['file://localhost URI outside', () => 'file://localhost/etc/passwd', 'outside'],
    ['.env in the project root', () => '.env', 'sensitive'],
    ['./.env spelled with a dot segment', () => './.env', 'sensitive'],
    ['.env reached through dot-dot', () => 'src/./../.env', 'sensitive'],
    ['upper-case .ENV', () => '.ENV', 'sensitive'],
    ['mixed-case .Env.Local', () => '.Env.Local', 'sensitive'],
    ['.env.local', () => '.env.local', 'sensitive'],
    ['fullwidth-dot look-alike of .env', () => '\uFF0Eenv', 'sensitive'],
    ['zero-width character inside .env', () => '.e\u200Bnv', 'sensitive'],
    ['nested .env.production', () => 'config/.env.production', 'sensitive'],
    ['nested .ssh/id_rsa', () => 'deep/a/b/.ssh/id_rsa', 'sensitive'],
    ['private key file *.pem', () => 'keys/server.pem', 'sensitive'],
    ['innocent name symlinked to .env', () => 'notes.txt', 'sensitive'],
    ['new .netrc file', () => '.netrc', 'sensitive'],
    ['cloud credentials under .aws/', () => '.aws/credentials', 'sensitive'],
    ['ed25519 key', () => 'id_ed25519', 'sensitive'],
    ['node_modules package that is a symlink outside', () => 'node_modules/pkg/index.js', 'outside'],
    ['real node_modules package is inside', () => 'node_modules/real-pkg/index.js', 'inside'],
    ['doubled slashes inside', () => 'src//app.ts', 'inside'],
    [
      'case variant of the root on a case-sensitive file system',
      () => root.replace(/proj$/, 'PROJ') + '/README.md',
      'outside',
    ],
    ['empty path', () => '', 'outside'],
  ];

  it.each(cases)('%s', async (_name, p, expected) => {
    expect(await classOf(p())).toBe(expected);
  });

  it('has at least 40 attack cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(40);
  });
});

describe('path guard: which arguments are paths', () => {
  it('finds every entry of paths[] and classifies each', async () => {
    const r = await classify({ paths: ['src/app.ts', '../outside/secret.txt'] }, { tool: 'read_multiple_files' });
    expect(r.map((x) => [x.arg, x.class])).toEqual([
      ['paths[0]', 'inside'],
      ['paths[1]', 'outside'],
    ]);
  });

  it('a file with a second name (hard link) counts as outside: that name may be outside the project', async () => {
    const [r] = await classify({ path: 'hardlinked.txt' });
    expect(r).toMatchObject({ class: 'outside', reason: expect.stringMatching(/2 hard links/) });
    expect(await classOf('src/app.ts')).toBe('inside');
  });

  it("run_command's cwd outside the project is an execute on an outside path", async () => {
    const [r] = await classify({ command: 'ls', cwd: '../outside' }, { tool: 'run_command', readOnly: false });
    expect(r).toMatchObject({ arg: 'cwd', class: 'outside', op: 'execute' });
  });

  it("a relative path in a command is resolved against the command's cwd, not the project root", async () => {
    const r = await classify(
      { command: 'ls ../../../../../Documents', cwd: 'a/b/c/d' },
      { tool: 'run_command', readOnly: false }
    );
    expect(r.map((x) => [x.arg, x.requested, x.class])).toEqual([
      ['command', 'a/b/c/d/../../../../../Documents', 'outside'],
      ['cwd', 'a/b/c/d', 'inside'],
    ]);
  });

  it('paths named in a shell command are checked', async () => {
    const r = await classify(
      { command: 'cat ~/.ssh/id_rsa ../outside/secret.txt src/app.ts && cat .env' },
      { tool: 'run_command', readOnly: false }
    );
    expect(r.map((x) => [x.requested, x.class])).toEqual([
      ['~/.ssh/id_rsa', 'outside'],
      ['../outside/secret.txt', 'outside'],
      ['.env', 'sensitive'],
    ]);
  });

  it('source and destination of a move are both writes', async () => {
    const r = await classify(
      { source: 'src/app.ts', destination: '/tmp/stolen.ts' },
      { tool: 'move_file', readOnly: false }
    );
    expect(r.map((x) => [x.arg, x.op, x.class])).toEqual([
      ['source', 'write', 'inside'],
      ['destination', 'write', 'outside'],
    ]);
  });

  it('uses schema hints: a property with format uri or a description naming a path', () => {
    const found = extractPathCandidates({
      server: 'other',
      tool: 'open',
      args: { input: '/etc/shadow', location_hint: 'x', query: 'needle' },
      inputSchema: {
        properties: {
          input: { description: 'Path to the file to open' },
          query: { description: 'text to find in the file' },
        },
      },
      readOnly: true,
    });
    expect(found.map((c) => c.arg)).toEqual(['input']);
  });

  it('finds file: URIs under any argument name', () => {
    const found = extractPathCandidates({
      server: 'x',
      tool: 'y',
      args: { resource: 'file:///etc/passwd', note: 'hello' },
      readOnly: true,
    });
    expect(found).toEqual([{ arg: 'resource', raw: 'file:///etc/passwd', op: 'read' }]);
  });

  it('reports the canonical real path as the grant key', async () => {
    const [r] = await classify({ path: 'link-out/secret.txt' });
    expect(r.real).toBe(path.join(base, 'outside/secret.txt'));
  });
});

describe('path guard helpers', () => {
  it('the folders a relative path lies in, outermost first', () => {
    expect(parentFolders('billing/core/mailer.py')).toEqual(['billing', 'billing/core']);
    expect(parentFolders('app.py')).toEqual([]);
  });

  it('a here-document is a program: its operators are no paths, a path it names is', () => {
    const program = "python3 - <<'END'\nprint(sum(r) / len(r), n // 2)\nx /= 2\nprint(open('/etc/passwd').read())\nEND";
    expect(commandPathTokens(program)).toEqual(['/etc/passwd']);
    // `as file:` is Python, not a `file:` URI (asked about as the root, and granted, it broke the sandbox's scan).
    expect(commandPathTokens("python3 - <<'E'\nwith open('a.csv') as file:\n    pass\nE")).toEqual([]);
    expect(commandPathTokens('cat file:///etc/passwd')).toEqual(['file:///etc/passwd']);
    // The control: the same operator as a shell word is a path (the root).
    expect(commandPathTokens('ls /')).toEqual(['/']);
    expect(commandPathTokens('cat <<EOF > /tmp/x\na / b\nEOF')).toEqual(['/tmp/x']);
  });

  it('commandPathTokens skips plain words and flags, keeps flag values that are paths', () => {
    expect(commandPathTokens('grep -rn TODO src --include=*.ts --file=/etc/passwd')).toEqual(['/etc/passwd']);
    expect(commandPathTokens('curl https://example.com/x')).toEqual([]);
  });

  it('isWithin compares root + separator', () => {
    expect(isWithin('/proj', '/proj-evil/x')).toBe(false);
    expect(isWithin('/proj', '/proj/x')).toBe(true);
    expect(isWithin('/proj', '/proj')).toBe(true);
    expect(isWithin('/', '/anything')).toBe(true);
    expect(isWithin('/Proj', '/proj/x', true)).toBe(true);
  });

  it('normalize collapses dot segments lexically', () => {
    expect(normalize('/a/./b/../c//d/')).toBe('/a/c/d');
    expect(normalize('/../..')).toBe('/');
  });

  it('globs: name patterns match at any depth, ** crosses directories', () => {
    expect(globMatch('.env.*', 'a/b/.env.local')).toBe(true);
    expect(globMatch('**/.ssh/**', '.ssh/id_rsa')).toBe(true);
    expect(globMatch('src/*.ts', 'src/a/b.ts')).toBe(false);
    expect(globMatch('src/**/*.ts', 'src/a/b.ts')).toBe(true);
    expect(globMatch('*.{ts,js}', 'x/y.js')).toBe(true);
  });

  it('resolvePath reports a missing file with its parent resolved', async () => {
    const facts = await resolvePath(path.join(root, 'link-out/new/deeper.txt'));
    expect(facts).toMatchObject({ real: path.join(base, 'outside/new/deeper.txt'), exists: false });
  });
});

describe('shell commands', () => {
  it('device files and system programs are not asked about; other system paths are', () => {
    expect(commandPathTokens('/usr/bin/env node build.js 2>/dev/null > /dev/stdout')).toEqual([]);
    expect(commandPathTokens('cat /etc/shadow /usr/bin/../../etc/passwd')).toEqual([
      '/etc/shadow',
      '/usr/bin/../../etc/passwd',
    ]);
  });
});

describe("protected files and Klea's own state", () => {
  const guard = (args: Record<string, unknown>, readOnly: boolean, tool = readOnly ? 'read_file' : 'write_file') =>
    guardToolCall(
      { server: 'workspace', tool, args, readOnly },
      {
        projectDir: root,
        sensitivePatterns: DEFAULT_SENSITIVE_PATTERNS,
        protectedPatterns: DEFAULT_PROTECTED_PATTERNS,
        ownState: [path.join(root, '.klea'), path.join(base, 'data')],
        homeDir: home,
      }
    )[0];

  it('write_file rewriting .git/config or planting a hook is asked about; reading them is ordinary', () => {
    for (const p of ['.git/config', '.git/hooks/pre-commit', '.vscode/tasks.json', '.envrc', 'sub/klea.yaml']) {
      const w = guard({ path: p }, false);
      expect(w.class).toBe('sensitive');
      expect(w.op).toBe('write');
    }
    expect(guard({ path: '.git/hooks/pre-commit' }, false).reason).toMatch(/a protected file/);
    expect(guard({ path: '.git/config' }, true).class).toBe('inside');
    expect(guard({ path: '.git/objects/ab/cdef' }, false).class).toBe('inside');
    expect(guard({ path: '.git/index' }, false).class).toBe('inside');
  });

  it("another task's stored output under .klea/, or the data directory elsewhere, is forbidden, even through a link", () => {
    symlinkSync('.klea/results', path.join(root, 'results-link'));
    symlinkSync(path.join(base, 'data'), path.join(root, 'data-link'));
    for (const [p, readOnly] of [
      ['.klea/results/abc.txt', true],
      ['.klea', false],
      ['results-link/abc.txt', true],
      ['data-link/workspace-state/x.json', true],
      [path.join(base, 'data/temporal.db'), true],
      ['./.klea/../.klea/x', true],
    ] as const)
      expect(guard({ path: p }, readOnly).class).toBe('forbidden');
    expect(
      guardToolCall(
        { server: 'workspace', tool: 'run_command', args: { command: 'cat ./.klea/results/x' }, readOnly: false },
        { projectDir: root, sensitivePatterns: [], ownState: [path.join(root, '.klea')] }
      )[0].class
    ).toBe('forbidden');
  });

  it('where a protected pattern lies before any file matches it', () => {
    expect(protectedAnchor('.git/config')).toEqual({ path: '.git/config', dir: false });
    expect(protectedAnchor('.vscode/**')).toEqual({ path: '.vscode', dir: true });
    expect(protectedAnchor('**/.idea/**')).toEqual({ path: '.idea', dir: true });
    expect(protectedAnchor('.envrc')).toEqual({ path: '.envrc', dir: false });
    expect(protectedAnchor('.git/modules/**/hooks/**')).toBeNull();
    expect(protectedAnchor('*.code-workspace')).toBeNull();
    expect(protectedAnchor('AGENTS.md')).toEqual({ path: 'AGENTS.md', dir: false });
    expect(protectedAnchor('**/.github/workflows/**')).toEqual({ path: '.github/workflows', dir: true });
    expect(protectedAnchor('.aider*')).toBeNull();
    expect(protectedAnchor('**/lib/python*/site-packages/*.pth')).toBeNull();
  });

  it("attack: agent instructions and other programs' configuration, at any depth, are protected files", () => {
    const m = new ProtectedMatcher(DEFAULT_PROTECTED_PATTERNS);
    for (const p of [
      'AGENTS.md',
      'docs/api/AGENTS.md',
      'CLAUDE.md',
      'pkg/CLAUDE.local.md',
      'GEMINI.md',
      '.mcp.json',
      'sub/.mcp.json',
      '.cursor/mcp.json',
      'app/.cursor/rules/x.mdc',
      '.claude/settings.json',
      '.codex/config.toml',
      '.gemini/settings.json',
      '.continue/config.yaml',
      '.windsurf/rules.md',
      '.aider.conf.yml',
      'web/.vscode/tasks.json',
      '.github/workflows/ci.yml',
      'sub/.github/workflows/x.yml',
      '.gitmodules',
      'lib/.gitattributes',
      '.npmrc',
      'web/.yarnrc.yml',
      '.venv/lib/python3.11/site-packages/evil.pth',
      'env/lib/python3.12/site-packages/sitecustomize.py',
    ])
      expect([p, m.match(p)]).toEqual([p, expect.any(String)]);
    for (const p of [
      'README.md',
      'docs/agents.txt',
      '.github/ISSUE_TEMPLATE/bug.md',
      'src/x.pth',
      'a/site-packages/x.pth',
    ])
      expect([p, m.match(p)]).toEqual([p, null]);
  });

  it('attack: a repository below the root is protected as the top one is, its .git (directory or file) included', () => {
    const m = new ProtectedMatcher(DEFAULT_PROTECTED_PATTERNS);
    expect(m.match('.git')).toBe('.git');
    expect(m.match('vendor/lib/.git')).toBe('.git');
    expect(m.match('vendor/lib/.GIT')).toBe('.git');
    expect(m.match('vendor/lib/.git/config')).toBe('.git/config');
    expect(m.match('vendor/lib/.git/hooks/pre-commit')).toBe('.git/hooks/**');
    expect(m.match('vendor/lib/.git/info/attributes')).toBe('.git/info/**');
    expect(m.match('vendor/lib/.git/objects/ab/cd')).toBeNull();
    expect(m.match('vendor/lib/.git/index')).toBeNull();
    // A write_file that would make a .git file (a gitdir: pointer) is asked about.
    const dotGit = guard({ path: 'sub/.git' }, false);
    expect(dotGit.class).toBe('sensitive');
    expect(dotGit.reason).toMatch(/^a protected file \(matches "\.git"\): git runs a repository's hooks and settings/);
    expect(guard({ path: 'sub/.git/config' }, false).class).toBe('sensitive');
  });

  it('dependency folders are left to the package manager; a pattern that names node_modules still holds there', () => {
    const m = new ProtectedMatcher(DEFAULT_PROTECTED_PATTERNS);
    for (const p of [
      'node_modules/pkg/AGENTS.md',
      'node_modules/pkg/.github/workflows/ci.yml',
      'web/node_modules/x/.git',
    ])
      expect([p, m.match(p)]).toEqual([p, null]);
    expect(new ProtectedMatcher(['node_modules/**']).match('node_modules/pkg/index.js')).toBe('node_modules/**');
    // A directory named like it above the root is no dependency folder.
    expect(m.match('node_modules')).toBeNull();
  });

  it('write_file on AGENTS.md asks, saying why: an agent instruction file', () => {
    const w = guard({ path: 'AGENTS.md' }, false);
    expect(w).toMatchObject({ class: 'sensitive', op: 'write' });
    expect(w.reason).toMatch(/^a protected file \(matches "AGENTS\.md"\): an agent instruction file/);
    expect(guard({ path: 'docs/CLAUDE.md' }, false).class).toBe('sensitive');
    expect(guard({ path: 'AGENTS.md' }, true).class).toBe('inside');
  });

  it('the new sensitive defaults: .envrc, *.tfvars but not its example, .pgpass, .vault-token, .terraformrc, gh hosts', () => {
    const m = new SensitiveMatcher(DEFAULT_SENSITIVE_PATTERNS);
    for (const p of [
      '.envrc',
      'infra/prod.tfvars',
      '.pgpass',
      '.vault-token',
      '.terraformrc',
      'x/.config/gh/hosts.yml',
    ])
      expect(m.match(p)).not.toBeNull();
    expect(m.match('infra/prod.tfvars.example')).toBeNull();
    expect(m.match('.config/gh/config.yml')).toBeNull();
  });
});
