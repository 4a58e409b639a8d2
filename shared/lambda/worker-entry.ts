/**
 * The worker Lambda's handler for a set of task types: started every minute by EventBridge Scheduler
 * (the floor that guarantees progress), by a kick when a task is enqueued, and by a saturated worker
 * while the backlog grows. Each invocation takes a fleet seat first (at most
 * LEASEHOLD_WORKER_MAX_CONCURRENCY run), then claims until idle or out of time. Call it once, at module
 * level: what it builds (the runtime, the worker and its claim memory) lives as long as the execution
 * environment.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { loadConfig } from '../config.js';
import { createTaskRuntime } from '../task-runtime.js';
import { mathRandom, randomSuffix } from '../ids.js';
import { powertoolsMetrics } from '../metrics.js';
import { Worker } from '../worker/worker.js';
import { FleetSeats } from '../fleet/fleet-seats.js';
import { FleetScaler } from '../fleet/fleet-scaler.js';
import { runFleetInvocation } from '../fleet/fleet-invocation.js';
import { kickHorizonMs } from '../fleet/fleet-rules.js';
import { LambdaWorkerInvoker, SCHEDULED_TICK_SOURCE, type WorkerInvoker } from '../fleet/worker-invoker.js';
import { planIdleTick } from '../fleet/idle-tick.js';
import { readQueueSummary } from '../store/queue-summary.js';
import { Timekeeper } from '../worker/timekeeper.js';
import { workerStartEvent } from '../fleet/worker-start-event.js';
import { writeTargetOf } from '../store/context.js';
import { ChainInvoker } from '../fleet/chain-invoker.js';
import { TUNING } from '../tuning.js';
import type { TaskDefinition } from '../tasks/define.js';

export function createWorkerHandler(taskDefinitions: TaskDefinition[]) {
  const app = createTaskRuntime(loadConfig(process.env), taskDefinitions);
  const logger = new Logger({ serviceName: 'leasehold-worker' });
  const metrics = powertoolsMetrics('leasehold-worker');
  // One id per execution environment: invocations in it run one after another, and the fencing token
  // (not the id) tells their claims apart.
  const workerId = `lambda/${(process.env.AWS_LAMBDA_LOG_STREAM_NAME ?? 'local').replace(/[^A-Za-z0-9._:@/-]/g, '-').slice(-80)}/${randomSuffix()}`;

  const seats = new FleetSeats({
    target: writeTargetOf(app.store.ctx),
    clock: app.clock,
    random: mathRandom,
    cap: app.config.workerMaxConcurrency,
  });
  // The function starts more of itself by its own name (Lambda sets it), which needs no reference to
  // its own ARN in its configuration (that would be a circular dependency in the template).
  const functionName = process.env.AWS_LAMBDA_FUNCTION_NAME;
  const lambdaInvoker: WorkerInvoker = functionName
    ? new LambdaWorkerInvoker(functionName, undefined, (message, detail) => logger.warn(message, detail))
    : { start: () => Promise.resolve(false) };
  // Every self-start carries its chain's generation; deep chains start only into reserved seats.
  const invoker = new ChainInvoker({ invoker: lambdaInvoker, seats, logger });
  const scaler = new FleetScaler({ seats, invoker, clock: app.clock, logger });

  /** A burst is the tasks due within this second of its instant (what the timekeeper counted as one). */
  const BURST_WINDOW_MS = 1_000;
  /** The most entries a worker started ahead of a burst reads (keys only, about 60 bytes each). */
  const BURST_READ_LIMIT = 5_000;

  // One Worker per execution environment: its claim memory (calm or contended, spare heads, claims of
  // unknown outcome still to undo) carries over from one invocation to the next.
  const worker = new Worker({
    store: app.store,
    registry: app.registry,
    config: app.config,
    events: app.events,
    workerId,
    logger,
    metrics,
    onSaturated: ({ inBurst }) => scaler.saturated(inBurst ? app.clock.now() : undefined),
    // Out of its share of a burst, a worker steals what is still due in the delay partitions.
    refillDue: (now) => app.store.dueDelayed({ before: now, limit: BURST_READ_LIMIT }),
  });

  const handler = async (
    event: unknown,
    context: Pick<Context, 'getRemainingTimeInMillis' | 'awsRequestId'>,
  ) => {
    const start = workerStartEvent(event);
    const generation = start.hints.generation ?? 0;
    invoker.enter(generation);
    logger.appendKeys({ requestId: context.awsRequestId, source: start.source, generation });
    return runFleetInvocation(
      {
        worker,
        seats,
        rings: true,
        scaler,
        invoker,
        // Started ahead of the instant, the worker works the burst's shards from their heads; started into
        // a burst already under way (a scale-up), it steals from their other end.
        offerBurst: async (at) =>
          worker.offerDue(
            await app.store.dueDelayed({ before: at + BURST_WINDOW_MS, limit: BURST_READ_LIMIT }),
            { steal: at <= app.clock.now() },
          ),
        // The scheduled tick (the floor) first asks the queue summary whether there is anything to do.
        ...(start.source === SCHEDULED_TICK_SOURCE
          ? {
              idleCheck: async () =>
                planIdleTick(await readQueueSummary(app.store.ctx), app.clock.now(), {
                  recoveryIntervalMs: app.config.recoveryIntervalMs,
                  tickIntervalMs: TUNING.fleet.scheduledTickIntervalMs,
                }),
            }
          : {}),
        timekeeper: () =>
          new Timekeeper({
            store: app.store,
            clock: app.clock,
            timers: worker.timers,
            logger,
            events: worker.events,
            reads: {
              store: app.store,
              refreshMs: app.config.pollIntervalMs,
              horizonMs: kickHorizonMs(app.config.recoveryIntervalMs),
            },
            // A prewarmed worker takes about this many short tasks in the first seconds of a burst.
            onBurstAhead: (at, count) => scaler.prewarm(at, count, app.config.workerConcurrency * 25),
            offerDue: (entries) => worker.offerDue(entries),
          }),
        clock: app.clock,
        logger,
        clockSkewMs: app.config.clockSkewMs,
      },
      `${workerId}/${context.awsRequestId}`,
      () => context.getRemainingTimeInMillis(),
      start.hints,
    );
  };
  return handler;
}
