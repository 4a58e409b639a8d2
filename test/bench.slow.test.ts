import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Measure } from '../bench/measure.js';
import { bundleSizes } from '../bench/measures/cold-start.js';
import { requestsPerTask } from '../bench/measures/requests-per-task.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';

// The benchmark's cheapest measures run on every CI build (`npm run test:slow`, after `npm test`), so its
// code cannot rot and the targets that hold on any machine (bundle sizes, request counts) cannot
// regress unnoticed.
let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const byName = (measures: Measure[], name: string) => {
  const found = measures.find((m) => m.name === name);
  if (!found) throw new Error(`no measure named "${name}" among ${measures.map((m) => m.name).join(', ')}`);
  return found;
};

describe('the benchmark (quick, in CI)', () => {
  it('bundles every Lambda within 520 KB minified and 168 KB gzipped', { timeout: 120_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'leasehold-bundles-'));
    const sizes = await bundleSizes(
      { endpoint: server.endpoint, quick: true, log: () => undefined },
      dir,
    ).finally(() => rm(dir, { recursive: true, force: true }));
    expect(sizes).toHaveLength(8);
    for (const m of sizes) expect(m, `${m.name}: ${m.value} ${m.unit}`).toMatchObject({ met: true });
  });

  it(
    'counts 3 writes, at most 0.25 queries and 8 write units per short task through the worker runtime',
    { timeout: 120_000 },
    async () => {
      const measures = await requestsPerTask({
        endpoint: server.endpoint,
        quick: true,
        log: () => undefined,
      });
      expect(byName(measures, 'write requests per short task').value).toBe(3);
      expect(byName(measures, 'queries per short task').value).toBeLessThanOrEqual(0.25);
      expect(byName(measures, 'write units per short task, index writes included').value).toBe(8);
    },
  );
});
