/**
 * Review 2, MEDIUM-4, in the sim with DynamoDB's throttling on: 50,000 delayed tasks (10,000 with
 * LEASEHOLD_SIM_QUICK) enqueued as fast as the table lets them, beside 16 running leases, in a stack
 * synthesized with warm throughput for 2,000 starts a second and limits scaled to a twentieth. The load is
 * held back where it writes (the owner and delay indexes); nothing the lease path writes (the table,
 * the lease index) refuses a request, no lease is lost, and renewals keep their heartbeat.
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { warmThroughputFor } from '../../cdk/task-table.js';
import { INDEX } from '../../shared/table-layout.js';
import {
  DELAYED_BURST_SETTINGS,
  leasePathThrottles,
  runDelayedBurst,
} from '../../tools/sim/delayed-burst.js';

const quick = process.env.LEASEHOLD_SIM_QUICK === '1';

describe('a bulk delayed enqueue beside running leases, throttling on', () => {
  it(
    'throttles only the indexes the enqueue writes; renewals keep their pace and no lease is lost',
    { timeout: 20 * 60_000 },
    async () => {
      const figures = await runDelayedBurst({
        ...DELAYED_BURST_SETTINGS,
        // 50,000 at 200 a second: the limit held for 4 minutes, 25 heartbeats (npm run sim:delayed-burst: 100,000).
        tasks: quick ? 10_000 : 50_000,
        baselineMs: 30_000,
        progress: (line) => process.stderr.write(`delayed-burst: ${line}\n`),
      });
      process.stdout.write(`FIGURE delayed burst: ${JSON.stringify(figures)}\n`);
      writeFileSync(
        `tools/sim/results/delayed-burst${quick ? '-quick' : ''}.json`,
        `${JSON.stringify(figures, null, 2)}\n`,
      );
      // The load met DynamoDB's limits (it was held back), and only where it writes. The limit is the
      // delay index's warm writes, scaled: the load must not have gone faster (a bucket holds a second).
      const delayLimit =
        warmThroughputFor(DELAYED_BURST_SETTINGS.peakStartsPerSecond).indexes[INDEX.delay.name]!
          .writeUnitsPerSecond * DELAYED_BURST_SETTINGS.throttleScale;
      expect(figures.throttled.total).toBeGreaterThan(0);
      expect(figures.load.perSecond).toBeLessThanOrEqual(delayLimit * 1.05);
      for (const resource of Object.keys(figures.throttled.byResource))
        expect(['index/owner', 'index/delays']).toContain(resource);
      expect(leasePathThrottles(figures)).toBe(0);
      // The delay index took the load; the lease index only the lease path's writes.
      expect(figures.writeUnits['index/delays']).toBeGreaterThanOrEqual(figures.load.tasks);
      expect(figures.writeUnits['index/sweep']).toBeLessThan(figures.load.tasks / 10);
      // Renewals: every running task renewed at its heartbeat during the load as before it.
      const { heartbeatMs, before, during } = figures.leases;
      expect(before.renewals).toBeGreaterThan(16);
      expect(during.renewals).toBeGreaterThan(16);
      // The load takes a core of two, so timers and the sampler run late by up to a few seconds (measured
      // p99 11.0 to 11.6 s, max 11.4 to 12.6 s); a refused renewal would also show as a throttle above.
      expect(during.p99Ms).toBeLessThanOrEqual(heartbeatMs + 4_000);
      // No renewal was missed: a missed one leaves a gap of two heartbeats.
      expect(during.maxMs).toBeLessThan(heartbeatMs * 2);
      expect(figures.leases.reclaimed).toBe(0);
    },
  );
});
