/**
 * Figures measured on a machine with nothing else running (enqueue-to-start latency on two cores):
 * `npm run test:quiet`, one file at a time, run by `npm run test:slow` in CI after `npm test`.
 */
import { defineConfig } from 'vitest/config';
import { SOURCE_RESOLUTION } from './vitest.config.js';

export default defineConfig({
  ssr: SOURCE_RESOLUTION,
  test: {
    include: ['test/**/*.quiet.test.ts'],
    fileParallelism: false,
    testTimeout: 120_000,
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
