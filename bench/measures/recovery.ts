/**
 * Measure 5: recovery latency. Worker processes of the local stack and a recovery process share one
 * dynalite; a task is started, its holder is SIGKILLed, and the clock runs until another worker has
 * claimed it again. Compared with leaseTimeout + recoveryInterval: the lease must run out (plus the
 * skew margin, which recovery waits on purpose) and a sweep must come round; then the next poll claims it.
 */
import { performance } from 'node:perf_hooks';
import { lambdaEnvironment } from '../../cdk/lambda-env.js';
import { startStackProcess, waitFor, type StackProcess } from '../../test/support/stack-process.js';
import { benchTable } from '../bench-runtime.js';
import { measure, percentile, round, type BenchContext, type Measure } from '../measure.js';

export async function recoveryLatency(ctx: BenchContext): Promise<Measure[]> {
  const kills = ctx.quick ? 2 : 20;
  const table = await benchTable(ctx.endpoint, 'recovery', {
    leaseTimeoutMs: 2_000,
    heartbeatIntervalMs: 500,
    clockSkewMs: 100,
    requestDeadlineMs: 400,
    recoveryIntervalMs: 1_000,
    pollIntervalMs: 100,
    maxExecutionMs: 120_000,
    drainMarginMs: 1_000,
  });
  const { config } = table;
  const r = table.runtime();
  // The stack processes read the same settings from their environment.
  const env = {
    ...lambdaEnvironment(config),
    LEASEHOLD_TABLE: config.tableName,
    LEASEHOLD_DYNAMODB_ENDPOINT: ctx.endpoint,
  };
  let serial = 0;
  const startWorker = async () => {
    const id = `bench-recovery-worker-${++serial}`;
    return { id, stack: await startStackProcess(['--worker'], { ...env, LEASEHOLD_WORKER_ID: id }) };
  };
  const workers = new Map<string, StackProcess>();
  const procs: StackProcess[] = [];
  const latencies: number[] = [];
  try {
    procs.push(await startStackProcess(['--recovery'], env));
    for (let i = 0; i < 2; i++) {
      const w = await startWorker();
      workers.set(w.id, w.stack);
    }
    for (let k = 0; k < kills; k++) {
      const { task } = await r.store.enqueue({ type: 'demo.sleep', owner: 'bench', payload: { ms: 60_000 } });
      const holder = await waitFor(
        async () => {
          const t = await r.store.get({ id: task.id });
          return t.status === 'RUNNING' && t.leaseOwner ? t.leaseOwner : undefined;
        },
        30_000,
        'the task to start',
      );
      const victim = workers.get(holder);
      if (!victim) throw new Error(`task ${task.id} is held by ${holder}, not a worker this measure started`);
      victim.child.kill('SIGKILL');
      const killedAt = performance.now();
      workers.delete(holder);
      await waitFor(
        async () => {
          const t = await r.store.get({ id: task.id });
          return t.status === 'RUNNING' && t.attempts === 2 ? true : undefined;
        },
        30_000,
        'the task to run again',
      );
      latencies.push(performance.now() - killedAt);
      // Free the survivor's slot for the next round, and bring the worker count back to two.
      await r.store.requestCancel({ id: task.id });
      const w = await startWorker();
      workers.set(w.id, w.stack);
    }
  } finally {
    for (const p of [...procs, ...workers.values()]) p.child.kill('SIGKILL');
    r.client.destroy();
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  const bound = config.leaseTimeoutMs + config.recoveryIntervalMs;
  const allowed = bound + config.clockSkewMs + config.pollIntervalMs;
  ctx.log(
    `${kills} kills: p50 ${percentile(sorted, 50).toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms (leaseTimeout + recoveryInterval = ${bound} ms)`,
  );
  const parameters = {
    kills,
    leaseTimeoutMs: config.leaseTimeoutMs,
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    recoveryIntervalMs: config.recoveryIntervalMs,
    clockSkewMs: config.clockSkewMs,
    pollIntervalMs: config.pollIntervalMs,
  };
  return [
    measure({
      group: '5. recovery',
      name: 'kill to running again, p50',
      value: round(percentile(sorted, 50), 1),
      unit: 'ms',
      parameters: { ...parameters, ratioToLeasePlusInterval: round(percentile(sorted, 50) / bound, 3) },
    }),
    measure({
      group: '5. recovery',
      name: 'kill to running again, max',
      value: round(sorted.at(-1)!, 1),
      unit: 'ms',
      target: { op: '<=', value: allowed },
      parameters: { ...parameters, ratioToLeasePlusInterval: round(sorted.at(-1)! / bound, 3) },
      note: 'target: leaseTimeout + recoveryInterval, plus the skew margin recovery waits on purpose and one poll for the new claim',
    }),
  ];
}
