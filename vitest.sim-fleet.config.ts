import { defineConfig } from 'vitest/config';
import { SOURCE_RESOLUTION } from './vitest.config.js';

/**
 * The fleet's scenarios in the sim (`npm run test:sim:fleet`): each file starts a sim of its own,
 * synthesized with the settings it is about (a cap of 1 or 2 seats, a short claim window, a lowered
 * recursion limit), so they run one after another, never beside the main sim suite.
 */
export default defineConfig({
  ssr: SOURCE_RESOLUTION,
  test: {
    include: ['test/sim-fleet/**/*.sim.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 12 * 60_000,
    hookTimeout: 5 * 60_000,
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
