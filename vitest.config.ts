import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each test file starts its own dynalite; two cores run two files at a time.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
