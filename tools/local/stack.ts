/**
 * The local stack: the same API, worker and recovery code as the Lambdas, driven by timers instead of
 * schedules, on an embedded dynalite with its data on disk (or on a DynamoDB-compatible endpoint).
 */
import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { createLeasehold, type Leasehold } from '../../shared/app.js';
import { loadConfig } from '../../shared/config.js';
import { randomSuffix } from '../../shared/ids.js';
import { createDynamoClient, documentClientFor } from '../../shared/store/dynamo.js';
import { ensureTable } from '../../shared/store/table-setup.js';
import type { TaskDefinition } from '../../shared/tasks/define.js';
import { RecordingMetrics } from '../../shared/metrics.js';
import { runRecoverySweep } from '../../shared/recovery/recovery-sweep.js';
import { GaugeRotation } from '../../shared/store/gauge-rotation.js';
import { LegacyDelayWatch } from '../../shared/store/legacy-delays.js';
import { taskDefinitions } from '../../tasks/catalog.js';
import { Worker, type RunSummary } from '../../shared/worker/worker.js';
import { Timekeeper } from '../../shared/worker/timekeeper.js';
import { startDynalite, type DynaliteServer } from './dynalite.js';
import { LocalScheduleTicker } from '../../shared/schedules/local-ticker.js';
import { systemClock, type Clock } from '../../shared/clock.js';
import type { LeaseEvents } from '../../shared/events.js';
import type { LeaseStore } from '../../shared/store/ports.js';
import type { TaskStore } from '../../shared/store/task-store.js';
import { serveApi, type LocalApiServer } from './http-bridge.js';
import { API_ROUTES } from '../../shared/api/api-handler.js';
import { openApiDocument } from '../../shared/api/openapi.js';
import { openWakeChannel } from './wake-channel.js';
import { TUNING } from '../../shared/tuning.js';

/** Recovery sweeps one local stack runs at once (see runSweep). */
const MAX_SWEEPS_IN_FLIGHT = 2;
/**
 * How often a sweep also counts the queue (about a hundred keys-only queries) and writes the summary
 * GET /stats shows: once a minute, as the recovery Lambda does, however often the local sweeps run.
 */
const QUEUE_GAUGE_INTERVAL_MS = 60_000;

export interface Roles {
  api: boolean;
  worker: boolean;
  recovery: boolean;
}

export interface StackOptions {
  env: Record<string, string | undefined>;
  roles: Roles;
  definitions?: TaskDefinition[];
  logger?: Logger;
  /** Instruments a test harness wires in from outside production (the chaos harness's entry point). */
  harness?: StackHarness;
}

export interface StackHarness {
  /** The lease clock of every role (e.g. skewed). */
  clock?: Clock;
  /** Told of the lifecycle stream and who writes to it, before anything runs (e.g. a history recorder). */
  observe?: (events: LeaseEvents, writer: string) => void;
  /** What the worker writes through (e.g. a store with a seeded bug). */
  leaseStore?: (store: TaskStore) => LeaseStore;
}

export interface LocalStack {
  app: Leasehold;
  apiUrl: string | undefined;
  dynamodbEndpoint: string;
  embedded: boolean;
  workerId: string | undefined;
  /** Stops claiming, drains (bounded), releases leases, closes everything. */
  stop(): Promise<void>;
}

export async function startStack(options: StackOptions): Promise<LocalStack> {
  const base = loadConfig(options.env);
  let dynalite: DynaliteServer | undefined;
  if (!base.dynamodbEndpoint) {
    const dir = resolve(base.dataDir, 'dynamodb');
    await mkdir(dir, { recursive: true });
    dynalite = await startDynalite({ path: dir });
  }
  const config = { ...base, dynamodbEndpoint: base.dynamodbEndpoint ?? dynalite!.endpoint };
  const client = createDynamoClient(config);
  // Its own dynalite's table is the developer's local data: rebuilt in place when an index is new.
  await ensureTable(client, base.tableName, undefined, { rebuild: dynalite !== undefined });
  const workerId = options.roles.worker
    ? (base.workerId ?? `${hostname().replace(/[^A-Za-z0-9.-]/g, '-')}-${process.pid}-${randomSuffix()}`)
    : undefined;
  const clock = options.harness?.clock ?? systemClock();
  const definitions = options.definitions ?? taskDefinitions;
  const app = createLeasehold(config, definitions, {
    doc: documentClientFor(client),
    clock,
  });
  options.harness?.observe?.(app.events, workerId ?? `recovery-${process.pid}`);
  const logger = options.logger ?? new Logger({ serviceName: 'leasehold-local' });
  const metrics = new RecordingMetrics();

  let api: LocalApiServer | undefined;
  if (options.roles.api)
    api = await serveApi(
      { ...app, logger, openApi: () => openApiDocument(API_ROUTES, definitions) },
      app.config.port,
      undefined,
      { allowedHosts: app.config.allowedHosts },
    );

  // Processes sharing this data directory's table wake each other's idle workers when a task arrives
  // (the in-process worker hears it on the stream directly). A hint only: the next poll is the floor.
  const wake = await openWakeChannel({ dir: join(resolve(base.dataDir), 'wake') });
  const unsubscribeWake = [
    app.events.on('task:enqueued', () => wake.ring()),
    wake.onRing(() => app.events.emit('task:readied', {})),
  ];

  const stopWorker = new AbortController();
  let workerRun: Promise<RunSummary> | undefined;
  if (workerId) {
    const store = options.harness?.leaseStore?.(app.store) ?? app.store;
    const worker = new Worker({
      store,
      registry: app.registry,
      config: app.config,
      events: app.events,
      workerId,
      logger,
      metrics,
      clock,
      // Every local writer wakes it (this process's events, the wake channel): idle, a short poll
      // interval backs off to a second, so its rounds do not crowd out the work it is woken for.
      idlePollCeilingMs: TUNING.poll.idleCeilingMs,
    });
    // The stack's one owner of promotion (the recovery sweep is the floor under it): it reads the delay
    // partitions every poll (a second at the fastest) and is told of what this process delays.
    const timekeeper = new Timekeeper({
      store,
      clock,
      timers: worker.timers,
      logger,
      events: worker.events,
      reads: { store: app.store, refreshMs: app.config.pollIntervalMs },
    });
    unsubscribeWake.push(
      app.events.on('task:enqueued', ({ taskId, availableAt }) => {
        if (availableAt > clock.now()) timekeeper.expect(taskId, availableAt);
      }),
    );
    workerRun = worker.run({ stop: stopWorker.signal, idleStopMs: Number.POSITIVE_INFINITY, timekeeper });
  }

  const sweeps = new Set<Promise<unknown>>();
  let recoveryTimer: NodeJS.Timeout | undefined;
  if (options.roles.recovery) {
    let lastGaugeAt = Number.NEGATIVE_INFINITY;
    const rotation = new GaugeRotation();
    // A table kept from an earlier version (a persistent endpoint) may hold delays under the old keys.
    const legacy = new LegacyDelayWatch();
    const runSweep = () => {
      // Sweeps may overlap (each fix is conditioned on the lease it observed, so two sweeps never both
      // fix a task): a sweep held up by one slow write (a 2 s deadline, resent) must not hold back the
      // next one, or every other expired lease waits for it. Two at a time at most.
      if (sweeps.size >= MAX_SWEEPS_IN_FLIGHT) return;
      const gauge = clock.now() - lastGaugeAt >= QUEUE_GAUGE_INTERVAL_MS;
      if (gauge) lastGaugeAt = clock.now();
      const sweep = runRecoverySweep(
        app.store,
        { clock, metrics, logger, rotation, legacy },
        gauge ? app.registry.names() : [],
      )
        .catch((error: unknown) => logger.error('recovery sweep failed', { error: String(error) }))
        .finally(() => sweeps.delete(sweep));
      sweeps.add(sweep);
    };
    runSweep(); // at start: finishes what a crashed earlier run left behind as soon as its leases run out
    recoveryTimer = setInterval(runSweep, app.config.recoveryIntervalMs);
  }

  // Every running stack fires the schedules' ticks; each tick's idempotency key makes it one task.
  const ticker = app.schedules.evaluatedLocally
    ? new LocalScheduleTicker(app.schedules, clock, logger)
    : undefined;
  ticker?.start();

  return {
    app,
    apiUrl: api?.url,
    dynamodbEndpoint: config.dynamodbEndpoint,
    embedded: dynalite !== undefined,
    workerId,
    stop: async () => {
      clearInterval(recoveryTimer);
      await ticker?.stop();
      stopWorker.abort();
      await workerRun;
      await Promise.all(sweeps);
      unsubscribeWake.forEach((off) => off());
      await wake.close();
      await api?.close();
      client.destroy();
      await dynalite?.close();
    },
  };
}

/** What `serve` prints: where it listens and how to enqueue a first task. */
export function banner(stack: LocalStack, roles: Roles, dataDir: string): string[] {
  const lines = ['Leasehold local stack'];
  if (stack.apiUrl)
    lines.push(
      `  API       listening on ${stack.apiUrl} (caller: the X-Leasehold-Owner header, default "local"; development only)`,
      `  dashboard ${stack.apiUrl}/ (acting as "local")`,
    );
  lines.push(
    `  DynamoDB  ${stack.dynamodbEndpoint} (${stack.embedded ? `embedded dynalite, data in ${join(dataDir, 'dynamodb')}` : 'external endpoint'}), table ${stack.app.config.tableName}`,
  );
  if (roles.worker)
    lines.push(
      `  worker    ${stack.workerId}, ${stack.app.config.workerConcurrency} at a time, types: ${stack.app.registry.names().join(', ')}`,
    );
  if (roles.recovery) lines.push(`  recovery  every ${stack.app.config.recoveryIntervalMs / 1000} s`);
  if (stack.app.schedules.evaluatedLocally)
    lines.push('  schedules evaluated here every second (PUT /schedules/{name})');
  if (stack.apiUrl) {
    lines.push('Try:');
    lines.push(
      `  curl -s -X POST ${stack.apiUrl}/tasks -H 'content-type: application/json' -d '{"type":"demo.echo","payload":{"hello":"world"}}'`,
    );
    lines.push(`  npx leasehold list --url ${stack.apiUrl}`);
  }
  lines.push('Ctrl-C stops it (running tasks are given back, not lost).');
  return lines;
}
