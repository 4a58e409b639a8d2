/** A table with a fast lease configuration, real time, and workers on it: for runtime and function tests. */
import { Logger } from '@aws-lambda-powertools/logger';
import { systemClock, type Clock } from '../../shared/clock.js';
import { recordHistory, type HistorySink } from '../chaos/history.js';
import type { ConfigInput } from '../../shared/config.js';
import type { TaskDefinition } from '../../shared/tasks/define.js';
import { TaskRegistry } from '../../shared/tasks/registry.js';
import { TaskSubmitter } from '../../shared/tasks/task-submitter.js';
import type { TaskStore } from '../../shared/store/task-store.js';
import { RecordingMetrics } from '../../shared/metrics.js';
import { Worker, type WorkerOptions } from '../../shared/worker/worker.js';
import type { LeaseholdConfig } from '../../shared/config.js';
import type { FakeLeaseStore } from './fake-lease-store.js';
import { createTestStore, type TestStore } from './test-store.js';
import { ScheduleService } from '../../shared/schedules/schedule-service.js';
import { ScheduleStore } from '../../shared/schedules/schedule-store.js';
import { localSync, type SchedulerSync } from '../../shared/schedules/scheduler-sync.js';

/** Lease 1.5 s, heartbeat 200 ms: the protocol's ratios at a speed tests can wait for. */
export const FAST_LEASES: ConfigInput = {
  leaseTimeoutMs: 1_500,
  heartbeatIntervalMs: 200,
  requestDeadlineMs: 150,
  clockSkewMs: 100,
  maxExecutionMs: 10_000,
  drainMarginMs: 400,
  pollIntervalMs: 20,
  idleStopMs: 300,
  recoveryIntervalMs: 2_000,
  backoffBaseMs: 20,
  backoffMaxMs: 100,
};

/**
 * Overrides of FAST_LEASES for tests whose assertion a timed-out read or write would change (a flush
 * sent again, a burst read given up): request deadlines of 600 ms rather than 150 (the rest of the
 * suite runs beside them on two cores, and 150 ms is then missed now and again), and the lease (3 s),
 * heartbeat (700 ms) and drain margin (1.3 s) the config rules then ask for.
 */
export const LOAD_TOLERANT_LEASES: ConfigInput = {
  leaseTimeoutMs: 3_000,
  heartbeatIntervalMs: 700,
  requestDeadlineMs: 600,
  drainMarginMs: 1_300,
};

export const silentLogger = () => new Logger({ serviceName: 'test', logLevel: 'SILENT' });

export interface WorkerWorld extends TestStore {
  registry: TaskRegistry;
  submitter: TaskSubmitter;
  schedules: ScheduleService;
  /** A worker on its own store client (a peer by default); `history` records its and its store's steps. */
  worker(
    id: string,
    options?: {
      store?: TaskStore;
      metrics?: RecordingMetrics;
      clock?: Clock;
      history?: HistorySink;
      refillDue?: WorkerOptions['refillDue'];
    },
  ): Worker & { recorded: RecordingMetrics };
}

export async function createWorkerWorld(
  endpoint: string,
  definitions: TaskDefinition[],
  overrides: ConfigInput = {},
  sync: SchedulerSync = localSync,
  /** The clock of the world's stores and workers (the process clock by default). */
  world: { clock?: Clock } = {},
): Promise<WorkerWorld> {
  // The limits the definitions declare reach the stores as the runtime hands them (request-runtime.ts).
  const rateLimits = new TaskRegistry(definitions, { maxExecutionMs: Number.MAX_SAFE_INTEGER }).rateLimits();
  const t = await createTestStore(
    endpoint,
    { ...FAST_LEASES, ...overrides },
    { clock: world.clock ?? systemClock(), random: Math.random, rateLimits },
  );
  const registry = new TaskRegistry(definitions, t.config);
  const submitter = new TaskSubmitter(t.store, registry, t.config);
  return {
    ...t,
    registry,
    submitter,
    schedules: new ScheduleService(new ScheduleStore(t.store.ctx), sync, submitter, t.storeClock),
    worker: (id, options = {}) => {
      const recorded = options.metrics ?? new RecordingMetrics();
      const store = options.store ?? t.peer();
      if (options.history) recordHistory(store.events, options.history);
      const worker = new Worker({
        store,
        registry,
        config: t.config,
        events: store.events,
        workerId: id,
        logger: silentLogger(),
        metrics: recorded,
        clock: options.clock ?? t.storeClock,
        ...(options.refillDue ? { refillDue: options.refillDue } : {}),
      });
      return Object.assign(worker, { recorded });
    },
  };
}

/**
 * Worker 'w1' on the in-memory store, for the fake-time tests (`fake-time.ts`): its monotonic clock is
 * Date.now, which fake time moves.
 */
export function fakeTimeWorker(
  store: FakeLeaseStore,
  registry: TaskRegistry,
  config: LeaseholdConfig,
  extra: Partial<WorkerOptions> = {},
): Worker {
  return new Worker({
    store,
    registry,
    config,
    workerId: 'w1',
    events: store.events,
    logger: silentLogger(),
    metrics: new RecordingMetrics(),
    monotonic: () => Date.now(),
    ...extra,
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves when the signal aborts (or rejects at once with its reason, like fetch does). */
export const untilAborted = (signal: AbortSignal) =>
  new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

/**
 * The store of a worker that is cut off from the table (a network partition) right after its first
 * successful claim: its renewals error and its claims find nothing. Writes still get through, as they
 * would once the partition heals.
 */
export function partitionedAfterFirstClaim(store: TaskStore): TaskStore {
  let cut = false;
  const claim = store.claim.bind(store);
  store.claim = async (input, memory) =>
    cut ? { claimed: [], lostRaces: 0 } : claim(input, memory).then((r) => ((cut = r.claimed.length > 0), r));
  store.renew = async ({ leases }) =>
    leases.map((l) => ({
      taskId: l.taskId,
      outcome: 'error' as const,
      error: new Error('network partition'),
    }));
  return store;
}
