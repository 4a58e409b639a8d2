/**
 * Tests too slow for `npm test`, which stays under five minutes on two cores without them: on dynalite,
 * large backlogs (thousands of tasks each), the benchmark's cheapest measures (bundle sizes, request
 * counts), and the local stack and README's `npm start` as child processes. `npm run test:slow`, in
 * CI after `npm test`. One file at a time: each needs the two cores (a backlog beside the bundling
 * timed out).
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { SOURCE_RESOLUTION } from './vitest.config.js';

export default defineConfig({
  ssr: SOURCE_RESOLUTION,
  ...base,
  test: {
    ...base.test,
    include: ['test/**/*.slow.test.ts'],
    fileParallelism: false,
    exclude: ['test/sim/**', 'test/repro/**', '**/node_modules/**'],
  },
});
