/**
 * Measure 2: claim contention. 1, 4, 16 and 32 workers, each a worker runtime with its own SDK client,
 * drain the same tasks of one type; a conditional claim write that lost a race is wasted (billed,
 * harmless). Reported per successful claim.
 */
import { benchTable, drain, enqueueMany, sum } from '../bench-runtime.js';
import { measure, round, type BenchContext, type Measure } from '../measure.js';

export async function claimContention(ctx: BenchContext): Promise<Measure[]> {
  const tasks = ctx.quick ? 300 : 2_000;
  const results: Measure[] = [];
  for (const workers of [1, 4, 16, 32]) {
    const table = await benchTable(ctx.endpoint, `contention-${workers}`);
    const runtimes = Array.from({ length: workers }, () => table.runtime());
    await enqueueMany(runtimes[0]!.store, tasks, 16);
    for (const r of runtimes) r.meter.reset();
    const result = await drain(runtimes, tasks);
    const updates = sum(runtimes.map((r) => r.meter.count('UpdateItem')));
    const queries = sum(runtimes.map((r) => r.meter.count('Query')));
    for (const r of runtimes) r.client.destroy();
    const perClaim = result.lostRaces / result.claimed;
    ctx.log(
      `${workers} workers: ${result.lostRaces} lost races over ${result.claimed} claims (${round(perClaim, 4)} per claim), ${Math.round(result.elapsedMs)} ms`,
    );
    results.push(
      measure({
        group: '2. claim contention',
        name: `lost claim races per claim, ${workers} worker${workers > 1 ? 's' : ''}`,
        value: round(perClaim, 4),
        unit: 'writes',
        ...(workers === 32 ? { target: { op: '<=' as const, value: 0.02 } } : {}),
        parameters: {
          tasks,
          workers,
          workerConcurrency: table.config.workerConcurrency,
          claimed: result.claimed,
          lostRaces: result.lostRaces,
          // Claims and completes are one update each; what is left over are the lost races.
          updatesBeyondClaimAndComplete: updates - 2 * tasks,
          queriesPerTask: round(queries / tasks, 4),
          drainMs: Math.round(result.elapsedMs),
        },
      }),
    );
  }
  return results;
}
