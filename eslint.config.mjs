// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

// Workflow code runs inside Temporal's deterministic sandbox and is replayed from history. Anything that does
// I/O (Node built-ins, MCP, LangChain, the Temporal client/worker/activity packages, express) must stay out of
// workflows/ and common/ (which is bundled into workflows). Type-only imports are fine: they vanish at build.
const ioModuleNames = [
  ...builtinModules,
  ...builtinModules.map((m) => `node:${m}`),
  '@temporalio/client',
  '@temporalio/worker',
  '@temporalio/activity',
  '@temporalio/testing',
  'express',
  'openai',
  'yaml',
];
const ioModulePatterns = [
  '@modelcontextprotocol/*',
  '@langchain/*',
  '@temporalio/client/*',
  '@temporalio/worker/*',
  '@temporalio/activity/*',
  '@temporalio/testing/*',
];
const sandboxMessage =
  'workflows/ and common/ are bundled into the deterministic workflow sandbox: no I/O modules (use `import type`, or move the code to activities/).';
const sandboxPaths = ioModuleNames.map((name) => ({ name, allowTypeImports: true, message: sandboxMessage }));
const sandboxPatterns = [{ group: ioModulePatterns, allowTypeImports: true, message: sandboxMessage }];

// Folder boundaries. Each folder has one block setting @typescript-eslint/no-restricted-imports: when two blocks
// set the same rule for a file, the later one's options replace the earlier one's, so blocks must not overlap.
/** A relative import of one of the repository's top-level folders, from a file at any depth. */
const topLevel = (/** @type {string[]} */ names) => `^(\\.\\./)+(${names.join('|')})(/|$)`;
const folderBan = (/** @type {string[]} */ names, /** @type {string} */ message, allowTypeImports = false) => ({
  regex: topLevel(names),
  caseSensitive: true,
  allowTypeImports,
  message,
});
const clientMessage =
  "api/ and cli/ are Temporal clients: common/, runtime/, the workflows' messages.ts (and workflows/index.ts as types), the Temporal client. No workflow, activity, worker or tool code.";

// Messages go by their typed definitions (workflows/<workflow>/messages.ts), so renaming one fails to compile.
const typedMessages = {
  selector:
    'CallExpression[callee.property.name=/^(signal|query|executeUpdate|startUpdate|executeUpdateWithStart|startUpdateWithStart)$/][arguments.0.type=/^(Literal|TemplateLiteral)$/]',
  message:
    'send a workflow message by its definition from workflows/<workflow>/messages.ts (reviewSignal, stateQuery, ...), not by its name as a string',
};
const sharedStateMessage =
  'every workflow run shares this module (workflows/shared/preload.ts): keep state in the run (a class instance or a closure), not at module level';
const topLevelDeclaration = ['Program > VariableDeclaration', 'Program > ExportNamedDeclaration > VariableDeclaration'];
const noSharedState = [
  ...topLevelDeclaration.map((d) => ({ selector: `${d}[kind=/^(let|var)$/]`, message: sharedStateMessage })),
  // A collection at module level, also behind `as`/`satisfies`, or in a static field (a frozen Map still changes).
  ...[...topLevelDeclaration.map((d) => `${d} > VariableDeclarator`), 'PropertyDefinition[static=true]'].flatMap(
    (holder) =>
      ['', ' > TSAsExpression', ' > TSSatisfiesExpression'].map((wrap) => ({
        selector: `${holder}${wrap} > NewExpression[callee.name=/^(Map|Set|WeakMap|WeakSet|Array)$/]`,
        message: sharedStateMessage,
      }))
  ),
  { selector: 'PropertyDefinition[static=true][readonly!=true]', message: sharedStateMessage },
];

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.tools/**',
      '.klea/**',
      'coverage/**',
      'web/vendor/**',
      'test-artifacts/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': [
        'error',
        { prefer: 'type-imports', fixStyle: 'inline-type-imports' },
      ],
      'no-restricted-syntax': ['error', typedMessages],
    },
  },
  {
    files: ['common/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { paths: sandboxPaths, patterns: sandboxPatterns }],
    },
  },
  {
    // Every workflow run shares these modules (workflows/shared/preload.ts): a value at module level that can change
    // would carry one run's state into another. Frozen objects and arrays are fine; collections and variables not.
    files: ['common/**/*.ts', 'workflows/**/*.ts'],
    rules: {
      'no-restricted-syntax': ['error', typedMessages, ...noSharedState],
    },
  },
  {
    // Workflow code sees common/ and workflows/ alone, and activities/ as types (proxyActivities<Activities>).
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: sandboxPaths,
          patterns: [
            ...sandboxPatterns,
            folderBan(
              ['activities'],
              'workflows/ import activities/ as types only (`import type`): the worker builds the activities.',
              true
            ),
            folderBan(
              ['api', 'cli', 'worker', 'tools', 'runtime', 'scripts', 'bench', 'test', 'web'],
              'workflows/ import only common/ and workflows/ (and activities/ as types).'
            ),
          ],
        },
      ],
    },
  },
  {
    // The API and the CLI are clients: they start workflows and send typed messages, and run no workflow code.
    files: ['api/**/*.ts', 'cli/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            ...['@temporalio/worker', '@temporalio/activity', '@temporalio/testing'].map((name) => ({
              name,
              message: clientMessage,
            })),
            {
              name: '@temporalio/workflow',
              allowTypeImports: true,
              message: 'define messages in workflows/<workflow>/messages.ts and import them from there.',
            },
          ],
          patterns: [
            { group: ['@modelcontextprotocol/*', '@langchain/*'], message: clientMessage },
            folderBan(['activities', 'worker', 'tools', 'scripts', 'bench', 'test'], clientMessage),
            // A workflow's messages.ts is the client's contract; workflows/index.ts only lends its types.
            { regex: '^(\\.\\./)+workflows/(?!index$|[^/]+/messages$)', caseSensitive: true, message: clientMessage },
            {
              regex: '^(\\.\\./)+workflows(/index)?$',
              caseSensitive: true,
              allowTypeImports: true,
              message: clientMessage,
            },
          ],
        },
      ],
    },
  },
  {
    // Benchmarks, scripts and the shared test support (the stack, the fake model) may use anything but the tests.
    files: ['bench/**/*.ts', 'scripts/**/*.ts', 'scripts/**/*.mjs', 'test/support/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+test/(?!support(/|$))|^\\.\\./(unit|integration|e2e|real-model)(/|$)',
              caseSensitive: true,
              message:
                'bench/, scripts/ and test/support/ never import the tests: what they share lives in test/support/.',
            },
          ],
        },
      ],
    },
  },
  // tools/ is a standalone MCP server: what it shares with the worker (the grant format, the path guard) lives in
  // common/ and runtime/, so the server builds and runs without the worker's code.
  {
    files: ['tools/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(activities|workflows|api)(/|$)',
              message: 'tools/ stands alone: move what it shares with the worker to common/ or runtime/.',
            },
          ],
        },
      ],
    },
  },
  // The worker talks to the workspace server over MCP only; the protocol is in common/ and runtime/. The one
  // exception is the checkpoint library (tools/checkpoints, through its index): a rewind reads the store the server
  // journals into.
  {
    files: ['activities/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+tools(/(?!checkpoints$)|$)',
              message:
                'activities/ reaches the workspace server over MCP only: import the protocol from common/workspace-protocol or runtime/grant-signing (and checkpoints from tools/checkpoints).',
            },
          ],
        },
      ],
    },
  },
  {
    // The page: ES modules, loaded by the browser as they are.
    files: ['web/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: {
        window: 'readonly',
        TextDecoder: 'readonly',
        history: 'readonly',
        document: 'readonly',
        fetch: 'readonly',
        EventSource: 'readonly',
        console: 'readonly',
        localStorage: 'readonly',
        location: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        Notification: 'readonly',
      },
    },
  },
  {
    files: ['**/*.mjs', '**/*.cjs', '*.js', 'scripts/**/*.js'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        setTimeout: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  }
);
