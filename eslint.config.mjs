// @ts-check
import { join } from 'node:path';
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

const TS_FILES = ['functions/**/*.ts', 'shared/**/*.ts', 'test/**/*.ts', 'scripts/**/*.ts'];
const PRODUCT_FILES = ['functions/**/*.ts', 'shared/**/*.ts'];
const LOOSE_FILES = ['test/**/*.ts', 'scripts/**/*.ts'];

/**
 * Layering. Each entry: the files in `target` may not import anything under the paths in `from`.
 * Paths are relative to the repository root. To add a layer, append an entry.
 */
const LAYERS = [
  {
    target: 'shared/**',
    from: ['functions', 'test'],
    message: 'shared/ is the library; it must not depend on the function entry points or on tests.',
  },
  {
    target: 'shared/failover/**',
    from: ['shared/controllers', 'shared/store', 'shared/queue', 'shared/local', 'shared/telemetry', 'shared/http', 'functions'],
    message: 'shared/failover is the pure domain layer: no controllers, I/O adapters, telemetry or HTTP.',
  },
  {
    target: 'shared/api/**',
    from: ['shared/controllers', 'shared/store', 'shared/queue', 'shared/local', 'functions'],
    message: 'shared/api is the wire/schema layer: no controllers or storage adapters.',
  },
  {
    target: ['shared/store/**', 'shared/queue/**'],
    from: ['shared/controllers', 'shared/local', 'functions'],
    message: 'Storage and queue adapters sit below the controllers.',
  },
  {
    target: 'shared/controllers/**',
    from: ['functions', 'shared/local'],
    message: 'Controllers must not depend on the function entry points or on the local runner.',
  },
];

const zones = LAYERS.flatMap(({ target, from, message }) =>
  (Array.isArray(target) ? target : [target]).map((t) => ({ target: `./${t}`, from: from.map((f) => `./${f}`), message })),
);

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
    ignores: ['dist/**', 'node_modules/**', 'infra/**', 'coverage/**', '**/*.mjs', '**/*.mts', '**/*.cjs', '**/*.js', '.azurite/**', '__*__/**'],
  },
  {
    files: TS_FILES,
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    plugins: { 'import-x': importX },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: join(import.meta.dirname, 'tsconfig.json'), alwaysTryTypes: true })],
      'import-x/extensions': ['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs'],
      'import-x/external-module-folders': ['node_modules', 'node_modules/@types'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.mts', '.cts'] },
    },
    rules: {
      'import-x/order': [
        'error',
        {
          groups: ['builtin', 'external', 'internal', ['parent', 'sibling', 'index']],
          'newlines-between': 'never',
          alphabetize: { order: 'asc', caseInsensitive: true },
        },
      ],
      'import-x/no-restricted-paths': ['error', { zones }],
      '@typescript-eslint/no-unused-vars': unusedVars,
      // Lazy `require(...) as typeof import(...)` of the Azure Monitor, OTLP and identity SDKs is deliberate in
      // this CommonJS app (cold start: they load only when configured). Any other require() still needs a reason.
      '@typescript-eslint/no-require-imports': ['error', { allow: ['^@azure/identity$', '^applicationinsights$', '^@opentelemetry/'] }],
      // Table Storage entities are Record<string, unknown>; after a truthiness check TypeScript narrows to `{}`,
      // which this rule reports on every `String(e.column)`. Keep the rule for real object types.
      '@typescript-eslint/no-base-to-string': ['error', { ignoredTypeNames: ['Error', 'RegExp', 'URL', 'URLSearchParams', '{}'] }],
    },
  },
  {
    files: PRODUCT_FILES,
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
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
