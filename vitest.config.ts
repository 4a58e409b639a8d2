import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Suites with npm scripts of their own. */
export const LONGER_SUITES = [
  'test/sim/**',
  'test/schedule-stacks.test.ts',
  'test/**/*.slow.test.ts',
  // Figures that need the machine to themselves (latency on two cores): `npm run test:quiet`.
  'test/**/*.quiet.test.ts',
  // The fleet's scenarios, each in a sim of its own: `npm run test:sim:fleet`.
  'test/sim-fleet/**',
  // The dashboard in Chromium: `npm run test:browser` (vitest.browser.config.ts).
  'test/browser/**',
  // The packed package in a user's app (npm's registry or cache): `npm run test:example`.
  'test/example/**',
];

/** Files that wait on wall-clock time (minute ticks, child processes, cdk synth): started first, so the rest runs beside them. */
const LONG_RUNNING = ['schedule-stacks', 'local-stack.slow', 'infra', 'store-claim'];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = LONG_RUNNING.findIndex((name) => f.moduleId.includes(`/test/${name}.test.ts`));
      return i === -1 ? LONG_RUNNING.length : i;
    };
    return [...(await super.sort(files))].sort((a, b) => rank(a) - rank(b));
  }
}

/**
 * The package's own entries by name (`leasehold/client`) resolve to their TypeScript sources (the
 * `leasehold-source` condition of package.json's exports; the built package resolves to dist/).
 */
export const SOURCE_RESOLUTION = { resolve: { conditions: ['leasehold-source'] } };

export default defineConfig({
  ssr: SOURCE_RESOLUTION,
  test: {
    include: ['test/**/*.test.ts'],
    // The sim suite has its own config and npm script (it runs for minutes against one sim); the three
    // stacks firing on real minute ticks (about 90 s) run in `npm run test:dynamodb-local`, keeping
    // `npm test` under five minutes on two cores.
    exclude: [...LONGER_SUITES, 'test/repro/**', '**/node_modules/**'],
    // Each test file starts its own dynalite; two cores run two files at a time (vitest's default
    // would be one fewer than the cores: one file at a time here, 234 s against 169 s for two).
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    sequence: { sequencer: LongestFirst },
    // The pinned SDK warns once per process that releases after January 2027 need Node 22.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
