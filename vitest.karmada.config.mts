import { defineConfig } from 'vitest/config';

/**
 * Tests against a real Karmada control plane (test/helpers/realKarmada.ts), run by `npm run test:karmada`.
 * They build Karmada from the Go module proxy on first use (minutes, cached outside the repository) and each
 * file starts a whole control plane, so they run one file at a time with long timeouts.
 */
export default defineConfig({
  test: {
    include: ['test/karmada/**/*.test.ts'],
    environment: 'node',
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 40 * 60_000,
    reporters: ['default', './test/helpers/summaryReporter.ts'],
  },
});
