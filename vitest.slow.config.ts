/**
 * Tests on dynalite that write large backlogs (thousands of tasks each): `npm run test:slow`, in CI
 * after `npm test`, which stays under five minutes on two cores without them.
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['test/**/*.slow.test.ts'],
    exclude: ['test/sim/**', 'test/repro/**', '**/node_modules/**'],
  },
});
