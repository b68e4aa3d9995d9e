import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The real Karmada control plane's tests run on their own: npm run test:karmada.
    exclude: [...configDefaults.exclude, 'test/karmada/**'],
    environment: 'node',
    pool: 'forks',
    // Two cores: end-to-end files start host processes, so keep parallelism modest.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default', './test/helpers/summaryReporter.ts'],
  },
});
