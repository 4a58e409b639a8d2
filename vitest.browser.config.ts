/**
 * The dashboard in a real browser (Debian's Chromium via playwright-core, /usr/bin/chromium or
 * LEASEHOLD_CHROMIUM): `npm run test:browser`. Not part of `npm test`, whose five minutes are spent.
 * One file at a time: each starts a local stack and a browser, and two cores run one pair well.
 */
import { defineConfig } from 'vitest/config';
import { SOURCE_RESOLUTION } from './vitest.config.js';

export default defineConfig({
  ssr: SOURCE_RESOLUTION,
  test: {
    include: ['test/browser/**/*.browser.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 60_000,
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
