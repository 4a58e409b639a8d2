/**
 * Measure 14: a rate limit across workers. 8 workers, each a runtime with its own SDK client, drain
 * tasks of `bench.limited` (50 starts in any second). Reported: the achieved start rate against the
 * limit (starts a second between the first and the last start), the most starts any one-second window
 * held (from each start's `startedAt`, never above 50), and the writes per task beyond a plain task's
 * claim and completion (the token take, and give-backs after lost races).
 */
import { benchTable, drain, enqueueMany, sum } from '../bench-runtime.js';
import { measure, round, type BenchContext, type Measure } from '../measure.js';
import { mostStartsInWindow } from '../../test/support/rate-window.js';

const LIMIT = 50;
const WORKERS = 8;

export async function rateLimited(ctx: BenchContext): Promise<Measure[]> {
  const tasks = ctx.quick ? 300 : 1_000;
  const table = await benchTable(ctx.endpoint, 'rate-limit');
  const runtimes = Array.from({ length: WORKERS }, () => table.runtime());
  await enqueueMany(runtimes[0]!.store, tasks, 16, { type: 'bench.limited' });
  const starts: number[] = [];
  for (const r of runtimes) {
    r.meter.reset();
    r.store.events.on('claim:won', ({ startedAt }) => starts.push(startedAt));
  }
  const result = await drain(runtimes, tasks, { types: ['bench.limited'], timeoutMs: 120_000 });
  const updates = sum(runtimes.map((r) => r.meter.count('UpdateItem')));
  for (const r of runtimes) r.client.destroy();
  const spanMs = Math.max(...starts) - Math.min(...starts);
  const achieved = ((starts.length - 1) / spanMs) * 1_000;
  const most = mostStartsInWindow(starts, 1_000);
  ctx.log(
    `${WORKERS} workers, limit ${LIMIT}/s: ${starts.length} starts in ${spanMs} ms (${round(achieved, 1)}/s), most in a second ${most}, ${round(updates / tasks, 3)} updates a task`,
  );
  const parameters = { tasks, workers: WORKERS, limitPerSecond: LIMIT, spanMs, lostRaces: result.lostRaces };
  return [
    measure({
      group: '14. rate limits',
      name: `achieved start rate, ${WORKERS} workers, limit ${LIMIT} a second`,
      value: round(achieved / LIMIT, 3),
      unit: 'x limit',
      // The window check below is the bound; this says how much of the limit contention leaves.
      target: { op: '>=', value: 0.8 },
      parameters,
    }),
    measure({
      group: '14. rate limits',
      name: 'most starts in any one-second window',
      value: most,
      unit: 'starts',
      target: { op: '<=', value: LIMIT },
      parameters,
    }),
    measure({
      group: '14. rate limits',
      name: 'writes per rate-limited task (claim, token, completion, give-backs)',
      value: round(updates / tasks, 3),
      unit: 'writes',
      target: { op: '<=', value: 3.1 },
      parameters,
    }),
  ];
}
