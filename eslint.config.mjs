// @ts-check
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import simpleImportSort from 'eslint-plugin-simple-import-sort';
import tseslint from 'typescript-eslint';

const TS_FILES = ['functions/**/*.ts', 'shared/**/*.ts', 'cli/**/*.ts', 'test/**/*.ts', 'scripts/**/*.ts'];
const LOOSE_FILES = ['test/**/*.ts', 'scripts/**/*.ts'];

/**
 * Layering, as lint: each layer may not import the folders listed (relative imports, any depth). The
 * import graph as a whole (no cycle anywhere, use-cases one way only, the state layer below the
 * use-cases) is checked by test/unit/architecture.test.ts, which reads every import. The layer globs are
 * disjoint, so each file gets exactly one list.
 */
const ABOVE_ALL = ['functions', 'test'];
const LAYERS = [
  {
    files: ['shared/failover/**/*.ts'],
    forbidden: ['controllers', 'store', 'queue', 'local', 'telemetry', 'http', ...ABOVE_ALL],
    why: 'shared/failover is the pure decision layer',
  },
  { files: ['shared/api/**/*.ts'], forbidden: ['controllers', 'store', 'queue', 'local', ...ABOVE_ALL], why: 'shared/api holds schemas and decoding, no I/O' },
  {
    files: ['shared/store/**/*.ts', 'shared/queue/**/*.ts', 'shared/kube/**/*.ts'],
    forbidden: ['controllers', 'local', ...ABOVE_ALL],
    why: 'adapters implement ports; they do not call controllers',
  },
  { files: ['shared/controllers/**/*.ts'], forbidden: ['local', ...ABOVE_ALL], why: 'controllers do not depend on the triggers or the local host' },
  { files: ['cli/**/*.ts'], forbidden: ['shared', ...ABOVE_ALL], why: 'the CLI is a client of the HTTP API, not of the app’s modules' },
  {
    files: ['shared/*.ts', 'shared/auth/**/*.ts', 'shared/http/**/*.ts', 'shared/telemetry/**/*.ts', 'shared/local/**/*.ts'],
    forbidden: ABOVE_ALL,
    why: 'shared/ does not depend on the triggers or on tests',
  },
];

const layerRules = LAYERS.map(({ files, forbidden, why }) => ({
  files,
  rules: {
    'no-restricted-imports': ['error', { patterns: [{ regex: `^(\\.\\./)+(${forbidden.join('|')})(/|$)`, message: `${why}.` }] }],
  },
}));

const unusedVars = [
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
];

export default defineConfig(
  {
    ignores: ['dist/**', 'node_modules/**', 'infra/**', 'coverage/**', '**/*.mjs', '**/*.mts', '**/*.cjs', '**/*.js', '.azurite/**', '__*__/**', '**/*.gen.ts'],
  },
  {
    files: TS_FILES,
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    plugins: { 'simple-import-sort': simpleImportSort },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // One import order, fixed by --fix: packages, then the project's own modules, one block.
      'simple-import-sort/imports': ['error', { groups: [['^node:', '^@?\\w', '^\\.']] }],
      'simple-import-sort/exports': 'error',
      '@typescript-eslint/no-unused-vars': unusedVars,
      // Lazy `require(...) as typeof import(...)` of the Azure Monitor, OTLP and identity SDKs is deliberate in
      // this CommonJS app (cold start: they load only when configured). Any other require() still needs a reason.
      '@typescript-eslint/no-require-imports': ['error', { allow: ['^@azure/identity$', '^applicationinsights$', '^@opentelemetry/'] }],
      // Table Storage entities are Record<string, unknown>; after a truthiness check TypeScript narrows to `{}`,
      // which this rule reports on every `String(e.column)`. Keep the rule for real object types.
      '@typescript-eslint/no-base-to-string': ['error', { ignoredTypeNames: ['Error', 'RegExp', 'URL', 'URLSearchParams', '{}'] }],
    },
  },
  ...layerRules,
  {
    files: LOOSE_FILES,
    rules: {
      // Tests and scripts poke at JSON responses, mocks and private state: `any` is the point there.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Fakes implement async interfaces without awaiting anything.
      '@typescript-eslint/require-await': 'off',
    },
  },
);
