import { defineConfig } from 'vitest/config';

/**
 * The package as a user gets it (`npm run test:example`): `npm pack`, the tarball installed into an
 * empty folder and into examples/minimal (copied to a temp folder), that app's `cdk synth`, and its
 * template run in the sim to a signed enqueue of its own task type reaching SUCCESS. It installs from
 * npm's cache or the registry, so it has its own script, not `npm test`.
 */
export default defineConfig({
  test: {
    include: ['test/example/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 10 * 60_000,
    hookTimeout: 10 * 60_000,
  },
});
