/**
 * Measure 10: what an idle deployment's minute costs in requests, with 1, 3 and 10 task types and
 * nothing queued (issue 16). Each minute the worker's scheduled tick and the recovery sweep run once:
 * - the tick as it runs now: it reads the queue summary the sweep wrote and returns (one GetItem);
 * - the tick as it ran before the summary (for comparison, in the same run): it takes a seat and
 *   polls every ready partition of every type (16 shards and a lane) with the timekeeper's reads of the
 *   16 delay partitions, until its idle window (LEASEHOLD_IDLE_STOP_MS, 2 s) ends;
 * - the recovery sweep: its sweep of the 32 lease and delay partitions, the depth gauge (17 heads per
 *   type, 32 sweep heads) and the summary's write.
 * Requests and read units as the SDK middleware counts them (an empty query bills the minimum 0.5).
 */
import * as z from 'zod';
import { systemClock } from '../../shared/clock.js';
import { runFleetInvocation } from '../../shared/fleet/fleet-invocation.js';
import { FleetSeats } from '../../shared/fleet/fleet-seats.js';
import { planIdleTick } from '../../shared/fleet/idle-tick.js';
import { Timekeeper } from '../../shared/worker/timekeeper.js';
import { kickHorizonMs } from '../../shared/fleet/fleet-rules.js';
import { RecordingMetrics } from '../../shared/metrics.js';
import { workerInvocationTimeoutMs } from '../../shared/invocation-budget.js';
import { runRecoverySweep } from '../../shared/recovery/recovery-sweep.js';
import { writeTargetOf } from '../../shared/store/context.js';
import { readQueueSummary } from '../../shared/store/queue-summary.js';
import { defineTask } from '../../shared/tasks/define.js';
import { TaskRegistry } from '../../shared/tasks/registry.js';
import { Worker } from '../../shared/worker/worker.js';
import { benchTable, quietLogger, sum } from '../bench-runtime.js';
import { measure, round, type BenchContext, type Measure } from '../measure.js';

const TICK_INTERVAL_MS = 60_000;

export async function idleMinute(ctx: BenchContext): Promise<Measure[]> {
  const group = '10. idle minute';
  const figures: Measure[] = [];
  for (const n of [1, 3, 10]) {
    const f = await idleFigures(ctx.endpoint, n);
    ctx.log(`${n} types: ${JSON.stringify(f)}`);
    const parameters = { types: n, ...f };
    figures.push(
      measure({
        group,
        name: `worker requests per idle minute (the scheduled tick), ${n} type${n === 1 ? '' : 's'}`,
        value: f.tick.requests,
        unit: 'requests',
        target: { op: '<=', value: 1 },
        parameters,
      }),
      measure({
        group,
        name: `worker requests per idle minute before the queue summary, ${n} type${n === 1 ? '' : 's'}`,
        value: f.pollingTick.requests,
        unit: 'requests',
        parameters,
        note: 'the same tick with no summary to read (it polls for its 2 s idle window): what it did before',
      }),
      measure({
        group,
        name: `recovery requests per idle minute, ${n} type${n === 1 ? '' : 's'}`,
        value: f.recovery.requests,
        unit: 'requests',
        parameters,
        note: '32 sweep queries, the depth gauge (17 heads per type and 32 sweep heads) and the summary write',
      }),
    );
  }
  return figures;
}

async function idleFigures(endpoint: string, n: number) {
  const types = Array.from({ length: n }, (_, i) => `idle.type${i}`);
  const table = await benchTable(endpoint, `idle-${n}`, { idleStopMs: 2_000 });
  const r = table.runtime();
  const { config, store, meter } = r;
  const registry = new TaskRegistry(
    types.map((name) => defineTask({ name, schema: z.unknown(), handler: () => null })),
    config,
  );
  const clock = systemClock();
  const logger = quietLogger();
  const worker = new Worker({
    store,
    registry,
    config,
    workerId: 'idle-bench',
    logger,
    events: store.events,
  });
  const seats = new FleetSeats({ target: writeTargetOf(store.ctx), clock, random: Math.random, cap: 10 });
  let invocationEnd = 0;
  const tick = (checkSummary: boolean) =>
    runFleetInvocation(
      {
        worker,
        seats,
        scaler: { settled: async () => undefined, refill: async () => false },
        invoker: { start: async () => true },
        timekeeper: () =>
          new Timekeeper({
            store,
            clock,
            timers: worker.timers,
            logger,
            reads: {
              store,
              refreshMs: config.pollIntervalMs,
              horizonMs: kickHorizonMs(config.recoveryIntervalMs),
            },
          }),
        clock,
        logger,
        clockSkewMs: config.clockSkewMs,
        ...(checkSummary
          ? {
              idleCheck: async () =>
                planIdleTick(await readQueueSummary(store.ctx), clock.now(), {
                  recoveryIntervalMs: config.recoveryIntervalMs,
                  tickIntervalMs: TICK_INTERVAL_MS,
                }),
            }
          : {}),
      },
      'idle-bench/req',
      // As Lambda counts it down from the worker function's timeout, sized as the stack sizes it.
      () => invocationEnd - clock.now(),
    );
  const counted = async (step: () => Promise<unknown>) => {
    meter.reset();
    invocationEnd = clock.now() + workerInvocationTimeoutMs(config);
    await step();
    const reported = sum(['GetItem', 'Query', 'BatchGetItem'].map((op) => meter.capacity.get(op) ?? 0));
    // Idle, every read is under 4 KB and eventually consistent: half a unit each, the minimum DynamoDB
    // bills even for an empty query (dynalite reports nothing for one).
    const reads = (meter.sent.get('GetItem') ?? 0) + (meter.sent.get('Query') ?? 0);
    return {
      requests: sum([...meter.sent.values()]),
      byOperation: Object.fromEntries(meter.sent),
      readUnitsBilled: round(Math.max(reported, reads * 0.5), 3),
    };
  };
  const recovery = await counted(() =>
    runRecoverySweep(store, { clock, metrics: new RecordingMetrics(), logger }, types),
  );
  const summaryTick = await counted(() => tick(true));
  const pollingTick = await counted(() => tick(false));
  r.client.destroy();
  return { tick: summaryTick, pollingTick, recovery };
}
