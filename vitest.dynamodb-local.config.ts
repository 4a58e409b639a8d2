/**
 * The suites that talk to DynamoDB, run against Amazon's DynamoDB Local instead of dynalite (one JVM
 * per test file, in memory): `npm run test:dynamodb-local`, in CI after `npm test`. Needs Java 17+.
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { SOURCE_RESOLUTION } from './vitest.config.js';

export default defineConfig({
  ssr: SOURCE_RESOLUTION,
  ...base,
  test: {
    ...base.test,
    include: [
      'test/store-*.test.ts',
      'test/worker.test.ts',
      'test/locks.test.ts',
      'test/schedules.test.ts',
      'test/api.test.ts',
      'test/api-types.test.ts',
      'test/worker-pause.test.ts',
      'test/functions.test.ts',
      'test/cli.test.ts',
      'test/local-stack.slow.test.ts',
      'test/schedule-stacks.test.ts',
    ],
    exclude: ['test/repro/**', '**/node_modules/**'],
    // Two JVMs (plus the tests' own Node processes) are what two cores carry.
    maxWorkers: 2,
    // A JVM starting beside another one takes a few seconds to answer.
    hookTimeout: 60_000,
    env: { ...base.test?.env, LEASEHOLD_TEST_BACKEND: 'dynamodb-local' },
  },
});
