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
    },
  },
  {
    files: ['workflows/**/*.ts', 'common/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: ioModuleNames.map((name) => ({ name, allowTypeImports: true, message: sandboxMessage })),
          patterns: [{ group: ioModulePatterns, allowTypeImports: true, message: sandboxMessage }],
        },
      ],
    },
  },
  {
    files: ['web/**/*.js'],
    languageOptions: {
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
      },
    },
  },
  {
    // The page's stream parser is also required by the CLI and the tests, as a CommonJS module.
    files: ['web/sse.js'],
    languageOptions: { globals: { module: 'writable' } },
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
