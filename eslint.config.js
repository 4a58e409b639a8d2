// ESLint (flat config) for Leasehold: `npm run lint`. The recommended rules of ESLint and
// typescript-eslint (syntax only, no type information, so a full run stays fast), plus a few of our own.
// Formatting is Prettier's job (`npm run format:check`), not ESLint's.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores([
    'cdk.out/',
    'dist/',
    'examples/*/node_modules/',
    'examples/*/cdk.out/',
    'coverage/',
    'docs/',
    '.leasehold/',
    '.leasehold-sim/',
    '.tmp/',
    // Scratch reproductions, not part of the project (tsconfig.json leaves them out too).
    'test/repro/',
    'test/model/',
  ]),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: { ...globals.node },
    },
    linterOptions: {
      reportUnusedDisableDirectives: 'error',
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'after-used',
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrors: 'all',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      eqeqeq: ['error', 'always'],
      'no-console': 'error',
    },
  },
  {
    // Tests read JSON back from HTTP answers and assert on its shape: typing each body would only
    // repeat the assertion.
    files: ['test/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // Command-line tools, the bench, the sim and the tests talk to a terminal.
    files: ['tools/cli/**', 'bench/**', 'tools/sim/**', 'test/**'],
    rules: {
      'no-console': 'off',
    },
  },
  {
    // The dashboard's page: ES modules the browser loads as they are (no build step), so browser globals.
    files: ['tools/dashboard/public/**/*.mjs'],
    languageOptions: {
      globals: { ...globals.browser },
    },
  },
  {
    // Plain CommonJS (the sim's Lambda runtime client, this repo's .cjs configs).
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
    },
    rules: {
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
);
