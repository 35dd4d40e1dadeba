/**
 * The default path patterns of Klea's configuration (common/config.ts): the sensitive files
 * (`tools.sensitive_patterns`), the protected ones (`tools.protected_patterns`), and those added to the protected
 * files when the project is Klea's own checkout. The path guard (common/path-guard.ts) matches them.
 */

export const DEFAULT_SENSITIVE_PATTERNS = [
  '.env',
  '.env.*',
  '*.env',
  '**/.ssh/**',
  '**/.aws/**',
  '**/.gnupg/**',
  '**/.config/gcloud/**',
  '**/.azure/**',
  '**/.kube/config',
  '**/.docker/config.json',
  '.netrc',
  '_netrc',
  '.npmrc',
  '.pypirc',
  '.git-credentials',
  'id_rsa',
  'id_rsa.*',
  'id_dsa',
  'id_ecdsa',
  'id_ecdsa.*',
  'id_ed25519',
  'id_ed25519.*',
  '*.pem',
  '*.key',
  '*.p12',
  '*.pfx',
  '*.keystore',
  '*.jks',
  'credentials.json',
  'service-account*.json',
  '*.tfstate',
  '*.tfvars',
  '.envrc',
  '.pgpass',
  '.vault-token',
  '.terraformrc',
  '**/.config/gh/hosts.yml',
];

/**
 * Files that tools on the host run or load on their own, later, with the user's authority: git's configuration and
 * hooks (in every repository of the project, below its root too), the instructions coding agents read, other
 * agents' and editors' configuration, CI workflows, package managers' settings, files Python runs at start, direnv's
 * `.envrc`, Klea's own configuration. A pattern without "/", or one starting with two stars and a slash, holds at
 * any depth, outside `node_modules/`. Commands see them read-only and cannot create them; write_file and edit_file
 * ask first, as for a sensitive file. A repository's `.git` entry is protected besides, wherever it is
 * (common/path-guard.ts).
 */
export const DEFAULT_PROTECTED_PATTERNS = [
  // git, in every repository of the project
  '.git/config',
  '.git/config.worktree',
  '.git/commondir',
  '.git/hooks/**',
  '.git/info/**',
  '.git/modules/**/config',
  '.git/modules/**/hooks/**',
  '.gitmodules',
  '.gitattributes',
  // the instructions coding agents read (Klea reads AGENTS.md, else CLAUDE.md)
  'AGENTS.md',
  'AGENTS.override.md',
  'CLAUDE.md',
  'CLAUDE.local.md',
  'GEMINI.md',
  '.cursorrules',
  '.windsurfrules',
  '.clinerules',
  // other agents' and editors' configuration: MCP servers, hooks, tasks
  '.mcp.json',
  '**/.claude/**',
  '**/.codex/**',
  '**/.cursor/**',
  '**/.gemini/**',
  '**/.continue/**',
  '**/.windsurf/**',
  '.aider*',
  '**/.vscode/**',
  '**/.idea/**',
  '**/.devcontainer/**',
  '**/.github/workflows/**',
  // package managers
  '.npmrc',
  '.yarnrc*',
  // what Python runs at every start of a virtualenv
  '**/lib/python*/site-packages/*.pth',
  '**/lib/python*/site-packages/sitecustomize.py',
  '**/lib/python*/site-packages/usercustomize.py',
  '.envrc',
  'klea.yaml',
];

/**
 * Added to the protected files when the project is Klea's own checkout: the code and the page the next start of
 * Klea (or `make test`) runs on the host.
 */
export const KLEA_CHECKOUT_PROTECTED_PATTERNS = [
  'activities/**',
  'api/**',
  'bench/**',
  'cli/**',
  'common/**',
  'deploy/**',
  'dist/**',
  'node_modules/**',
  'runtime/**',
  'scripts/**',
  'test/**',
  'tools/**',
  'web/**',
  'worker/**',
  'workflows/**',
  '.ci/**',
  'Makefile',
  'Dockerfile',
  'docker-compose.yml',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'jest.config.js',
  'jest.real-model.config.js',
  'eslint.config.mjs',
];
