import { defineConfig } from 'vitest/config';
import { SOURCE_RESOLUTION } from './vitest.config.js';

/**
 * The sim suite (`npm run test:sim`): one sim of the synthesized stack, started once (global setup),
 * and the scenarios in test/sim/ against it in real time, concurrently (they mostly wait for ticks).
 * LEASEHOLD_SIM_QUICK=1 (`npm run test:sim:quick`) leaves out the scenarios that wait for a worker
 * Lambda's full timeout.
 */
const quick = process.env.LEASEHOLD_SIM_QUICK === '1';

export default defineConfig({
  ssr: SOURCE_RESOLUTION,
  test: {
    include: ['test/sim/**/*.sim.test.ts'],
    exclude: quick ? ['test/sim/**/*.slow.sim.test.ts'] : [],
    globalSetup: ['test/sim/support/global-setup.ts'],
    pool: 'forks',
    // The scenarios wait on real minutes side by side; none is CPU-bound.
    maxWorkers: 6,
    fileParallelism: true,
    testTimeout: 9 * 60_000,
    hookTimeout: 5 * 60_000,
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
