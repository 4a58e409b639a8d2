import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each test file starts its own dynalite; two cores run two files at a time.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The pinned SDK warns once per process that releases after January 2027 need Node 22.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
