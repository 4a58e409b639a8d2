/**
 * The chaos harness: worker and recovery processes of the local stack against one dynalite, through a
 * fault proxy (with index lag: index reads served from a lagging replica); SIGKILLs and restarts,
 * SIGSTOP pauses past the lease, skewed clocks; then the checker over the histories, the proxy's
 * record of applied status writes and a final scan. A failed run keeps its files (histories, the
 * proxy's journal, the final table, the output of any process that died on its own) for
 * `test/chaos/explain.ts`.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { loadConfig } from '../../shared/config.js';
import { startDynalite } from '../../tools/local/dynalite.js';
import { createDynamoClient, documentClientFor } from '../../shared/store/dynamo.js';
import { ensureTable } from '../../shared/store/table-setup.js';
import { TaskStore } from '../../shared/store/task-store.js';
import { checkHistory, type CheckResult, type FinalTask, type Recorded } from './checker.js';
import { startFaultProxy, type FaultKind } from './fault-proxy.js';
import type { IndexLagStats } from './index-lag.js';
import { startStackProcess } from '../support/stack-process.js';
import { demoLimited } from '../../tasks/demo.js';

export interface ChaosOptions {
  tasks: number;
  workers: number;
  kills: number;
  pauses: number;
  faultRate: number;
  /** Clock offset of some workers, as a fraction of the skew margin (above 1: beyond the margin). */
  skewFraction: number;
  timeoutMs: number;
  /** One task in this many is of the concurrency-limited type (demo.fail, limit 2), as many of the rate-limited one (demo.limited, 5 a second): enough to test the limits, few enough not to throttle the run. */
  limitedEvery: number;
  /**
   * Index lag: each write reaches the index views (ready, sweep, owner) after a delay in [0, this]
   * ms, the way DynamoDB's eventually consistent GSIs trail the table (0: exact, as dynalite is).
   */
  indexLagMs: number;
  log?: (line: string) => void;
}

export const QUICK: ChaosOptions = {
  tasks: 150,
  workers: 3,
  kills: 3,
  pauses: 2,
  faultRate: 0.05,
  skewFraction: 0.5,
  timeoutMs: 240_000,
  limitedEvery: 5,
  indexLagMs: 1_000,
};
export const FULL: ChaosOptions = {
  tasks: 5_000,
  workers: 6,
  kills: 100,
  pauses: 50,
  faultRate: 0.1,
  skewFraction: 0.5,
  timeoutMs: 1_800_000,
  limitedEvery: 25,
  indexLagMs: 2_000,
};

/** The largest index lag the harness takes (DynamoDB's GSIs usually trail by under a second, sometimes by seconds). */
export const MAX_INDEX_LAG_MS = 2_000;

const LEASES = {
  LEASEHOLD_LEASE_TIMEOUT_MS: '2000',
  LEASEHOLD_HEARTBEAT_INTERVAL_MS: '400',
  LEASEHOLD_REQUEST_DEADLINE_MS: '300',
  LEASEHOLD_CLOCK_SKEW_MS: '400',
  LEASEHOLD_MAX_EXECUTION_MS: '10000',
  LEASEHOLD_DRAIN_MARGIN_MS: '1000',
  LEASEHOLD_POLL_INTERVAL_MS: '50',
  LEASEHOLD_RECOVERY_INTERVAL_MS: '1000',
  LEASEHOLD_BACKOFF_BASE_MS: '50',
  LEASEHOLD_BACKOFF_MAX_MS: '500',
  LEASEHOLD_WORKER_CONCURRENCY: '8',
  LEASEHOLD_TYPE_CONCURRENCY: 'demo.fail=2',
  // The workers serve the types the run enqueues: polling idle types would only add load.
  LEASEHOLD_WORKER_TYPES: 'demo.fail,demo.echo,demo.sleep,demo.limited,demo.sum',
  // Recovery looks at a waiting parent a second after it waits (then backs off): a count a killed
  // worker left undone is made within the run.
  LEASEHOLD_FLOW_CHECK_MS: '1000',
};

const TASK_TYPES = LEASES.LEASEHOLD_WORKER_TYPES.split(',');

export interface ChaosSummary extends CheckResult {
  options: ChaosOptions;
  killsDone: number;
  pausesDone: number;
  faults: Record<FaultKind, number>;
  requests: number;
  /** The lagging index view's figures (index lag on). */
  indexLag: IndexLagStats | undefined;
  /** Claim writes the proxy saw, and those refused by their condition (lost races). */
  claimWrites: { sent: number; refused: number };
  durationMs: number;
}

interface Proc {
  child: ChildProcess;
  id: string;
  exited: Promise<unknown>;
}

export async function runChaos(options: ChaosOptions): Promise<ChaosSummary> {
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-chaos-'));
  let keep = false;
  if (!(options.indexLagMs >= 0 && options.indexLagMs <= MAX_INDEX_LAG_MS))
    throw new Error(`indexLagMs must be within [0, ${MAX_INDEX_LAG_MS}], not ${options.indexLagMs}`);
  const dynalite = await startDynalite();
  // With index lag, a second dynalite holds the lagging copy the index reads are answered from.
  const replica = options.indexLagMs > 0 ? await startDynalite() : undefined;
  const proxy = await startFaultProxy({
    target: dynalite.endpoint,
    rate: options.faultRate,
    ...(replica ? { indexLag: { replica: replica.endpoint, maxLagMs: options.indexLagMs } } : {}),
    journal: join(dir, 'proxy-journal.jsonl'),
  });
  // The same settings the worker processes read from their environment; the harness's own requests
  // get a longer deadline (a loaded machine's dynalite can take longer than the workers' 300 ms).
  const config = loadConfig({
    ...LEASES,
    LEASEHOLD_TABLE: 'chaos',
    LEASEHOLD_DYNAMODB_ENDPOINT: dynalite.endpoint,
  });
  const harnessConfig = loadConfig({
    LEASEHOLD_REQUEST_DEADLINE_MS: '3000',
    LEASEHOLD_TABLE: 'chaos',
    LEASEHOLD_DYNAMODB_ENDPOINT: dynalite.endpoint,
  });
  const client = createDynamoClient(harnessConfig);
  await ensureTable(client, config.tableName);
  const replicaClient = replica
    ? createDynamoClient({ ...harnessConfig, dynamodbEndpoint: replica.endpoint })
    : undefined;
  if (replicaClient) await ensureTable(replicaClient, config.tableName);
  // Reads (depth, final scan) go to the table itself, exact; enqueues go through the proxy's
  // fault-free endpoint, so the lagging index view hears of them like of every other write.
  const store = new TaskStore({ doc: documentClientFor(client), config: harnessConfig });
  const enqueueClient = createDynamoClient({ ...harnessConfig, dynamodbEndpoint: proxy.cleanEndpoint });
  const enqueueStore = new TaskStore({ doc: documentClientFor(enqueueClient), config: harnessConfig });
  const procs = new Map<string, Proc>();
  /** Processes the harness itself kills or stops (any other exit is a crash). */
  const stopping = new Set<string>();
  const crashed: { id: string; code: number | null; t: number }[] = [];
  let serial = 0;

  const spawnRole = async (role: '--worker' | '--recovery', offsetMs: number): Promise<Proc> => {
    const n = ++serial;
    // The harness's lease settings override the stack's fast test defaults.
    const { child, exited, output } = await startStackProcess(
      [role],
      {
        ...LEASES,
        LEASEHOLD_DYNAMODB_ENDPOINT: proxy.endpoint,
        LEASEHOLD_TABLE: 'chaos',
        CHAOS_HISTORY_FILE: join(dir, `history-${n}.jsonl`),
        CHAOS_CLOCK_OFFSET_MS: String(offsetMs),
        LEASEHOLD_WORKER_ID: `${role.slice(2)}-${n}`,
        POWERTOOLS_LOG_LEVEL: 'ERROR',
      },
      // Starting one takes seconds (tsx compiles the stack); on a loaded machine, many more.
      120_000,
      // The harness's own entry point wires the clock offset and the history in (test/chaos/node.ts).
      ['test/chaos/node.ts'],
    );
    const id = role === '--worker' ? `worker-${n}` : `recovery-${n}`;
    const proc = { child, id, exited };
    procs.set(id, proc);
    // A process that ends without the harness stopping it has crashed: that breaks the run.
    void exited.then(async (code) => {
      if (stopping.has(id)) return;
      crashed.push({ id, code, t: Date.now() });
      await writeFile(join(dir, `output-${id}.txt`), output()).catch(() => undefined);
      log(
        `${id} exited on its own (code ${code}); its output is kept as output-${id}.txt:\n${output().slice(-2_000)}`,
      );
    });
    return proc;
  };

  const skew = Math.round(config.clockSkewMs * options.skewFraction);
  // Each worker's clock: on time, ahead or behind (within the margin unless skewFraction > 1).
  const offsetFor = (i: number) => [0, skew, -skew][i % 3]!;
  const kills: { worker: string; t: number }[] = [];
  let killsDone = 0;
  let pausesDone = 0;
  try {
    await spawnRole('--recovery', 0);
    for (let i = 0; i < options.workers; i++) await spawnRole('--worker', offsetFor(i));

    // The tasks arrive in waves, one before the chaos and one after each action, so workers have work
    // for every planned kill and pause however fast they drain.
    const actions = [...Array(options.kills).fill('kill'), ...Array(options.pauses).fill('pause')].sort(
      () => Math.random() - 0.5,
    );
    const perWave = Math.ceil(options.tasks / (actions.length + 1));
    const enqueued: string[] = [];
    const enqueueWave = async () => {
      const from = enqueued.length;
      const to = Math.min(options.tasks, from + perWave);
      for (let i = from; i < to; i += 50) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(50, to - i) }, (_, j) =>
            enqueueOnce(enqueueStore, i + j, options.limitedEvery),
          ),
        );
        enqueued.push(...batch.flat());
      }
    };
    await enqueueWave();
    log(
      `${options.tasks} tasks in waves of ${perWave}; ${options.workers} workers, faults at ${options.faultRate * 100} %, index lag ${options.indexLagMs > 0 ? `up to ${options.indexLagMs} ms` : 'off'}`,
    );

    const deadline = started + options.timeoutMs;
    const paused = new Set<string>();
    const running = () =>
      [...procs.values()].filter(
        (p) => p.id.startsWith('worker') && p.child.exitCode === null && !paused.has(p.id),
      );
    const pick = () => running()[Math.floor(Math.random() * running().length)];
    const resumes: Promise<void>[] = [];
    for (const action of actions) {
      if (Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 300 + Math.random() * 700));
      const victim = pick();
      if (victim) {
        kills.push({ worker: victim.id, t: Date.now() });
        if (action === 'kill') {
          stopping.add(victim.id);
          victim.child.kill('SIGKILL');
          await victim.exited;
          procs.delete(victim.id);
          killsDone++;
          await spawnRole('--worker', offsetFor(serial));
        } else {
          // Paused past its lease, resumed later; the next action does not wait for it.
          victim.child.kill('SIGSTOP');
          paused.add(victim.id);
          pausesDone++;
          resumes.push(
            new Promise<void>((r) => setTimeout(r, config.leaseTimeoutMs + config.clockSkewMs + 800)).then(
              () => {
                victim.child.kill('SIGCONT');
                paused.delete(victim.id);
              },
            ),
          );
        }
      }
      await enqueueWave();
    }
    while (enqueued.length < options.tasks) await enqueueWave();
    log(`all ${enqueued.length} tasks enqueued at ${((Date.now() - started) / 1000).toFixed(1)} s`);
    await Promise.all(resumes);
    while (Date.now() < deadline && (await remaining(store)) > 0)
      await new Promise((r) => setTimeout(r, 1_000));
    log(
      `faults off at ${((Date.now() - started) / 1000).toFixed(1)} s (${await remaining(store)} tasks left)`,
    );
    proxy.setRate(0);
    while (Date.now() < deadline && (await remaining(store)) > 0)
      await new Promise((r) => setTimeout(r, 1_000));

    for (const p of procs.values()) {
      stopping.add(p.id);
      p.child.kill('SIGTERM');
    }
    await Promise.all([...procs.values()].map((p) => p.exited));
    await proxy.flush();
    const history: Recorded[] = [];
    if (process.env.CHAOS_KEEP_HISTORY)
      await import('node:fs/promises').then((fs) =>
        fs.cp(dir, process.env.CHAOS_KEEP_HISTORY!, { recursive: true }),
      );
    for (const f of (await readdir(dir)).filter((f) => f.startsWith('history-'))) {
      for (const line of (await readFile(join(dir, f), 'utf8')).split('\n'))
        if (line) history.push(JSON.parse(line) as Recorded);
    }
    const final = await finalTasks(store);
    // The children parents enqueued themselves must end too.
    const listed = new Set(enqueued);
    const spawned = final.filter((t) => t.parentId !== undefined && !listed.has(t.id)).map((t) => t.id);
    const result = checkHistory({
      history,
      tasks: final,
      enqueued: [...enqueued, ...spawned],
      kills,
      // The table's record of every status change (from the proxy), so a write its writer never heard of still counts.
      statusWrites: proxy.statusWrites
        .filter((w) => w.pk.startsWith('TASK#'))
        .map((w) => ({ ...w, task: w.pk.slice('TASK#'.length) })),
      config: {
        ...config,
        limits: { 'demo.fail': 2 },
        rateLimits: { [demoLimited.name]: demoLimited.rateLimit! },
        // demo.sleep's groups run one at a time (groupConcurrency's default).
        groupConcurrency: { 'demo.sleep': 1 },
        maxClockOffsetMs: skew,
      },
    });
    for (const c of crashed)
      result.violations.push({
        invariant: 'processes stay up',
        detail: `${c.id} exited on its own (code ${c.code}) ${c.t - started} ms into the run`,
      });
    // The histories of a run that broke an invariant are kept for reading.
    if (result.violations.length > 0) keep = true;
    if (keep) await writeFile(join(dir, 'final-table.jsonl'), final.map((t) => JSON.stringify(t)).join('\n'));
    if (keep) log(`histories kept in ${dir}`);
    return {
      ...result,
      options,
      killsDone,
      pausesDone,
      faults: { ...proxy.injected },
      requests: proxy.requests,
      indexLag: proxy.indexLag && { ...proxy.indexLag },
      claimWrites: { ...proxy.claims },
      durationMs: Date.now() - started,
    };
  } finally {
    for (const p of procs.values()) {
      stopping.add(p.id);
      if (p.child.exitCode === null) p.child.kill('SIGKILL');
    }
    await Promise.all([...procs.values()].map((p) => p.exited));
    await proxy.close();
    client.destroy();
    enqueueClient.destroy();
    replicaClient?.destroy();
    await dynalite.close();
    await replica?.close();
    if (!keep) await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Enqueues task n (or flow n: its ids, the root first), retried until it is in: the idempotency key makes a retry return the task a lost
 * answer already created (the harness's dynalite can be slow on a loaded machine).
 */
async function enqueueOnce(store: TaskStore, n: number, limitedEvery: number): Promise<string[]> {
  for (let tries = 1; ; tries++) {
    try {
      // A flow: a demo.sum over three demo.echo children, and an optional demo.fail child that fails.
      if (n % limitedEvery === 4) {
        const flow = await store.enqueueFlow({
          owner: 'chaos',
          idempotencyKey: `chaos-${n}`,
          root: {
            task: { type: 'demo.sum', payload: null, maxAttempts: 10 },
            children: [
              ...[n, n + 1, n + 2].map((k) => ({ task: { type: 'demo.echo', payload: { n: k } } })),
              {
                task: { type: 'demo.fail', payload: { failTimes: 100 }, maxAttempts: 1, optional: true },
              },
            ],
          },
        });
        return [flow.task.id, ...flow.ids.children!.map((c) => c.id)];
      }
      const { task } = await store.enqueue({
        ...taskInput(n, limitedEvery),
        owner: 'chaos',
        idempotencyKey: `chaos-${n}`,
      });
      return [task.id];
    } catch (error) {
      if (tries >= 10) throw error;
      await new Promise((r) => setTimeout(r, 100 * tries));
    }
  }
}

/**
 * Task n of the run: one in `limitedEvery` of the concurrency-limited type (some fail and retry), as
 * many of the rate-limited one (5 starts a second), as many parents that enqueue their own children
 * (and as many flows: enqueueOnce), the rest echo or sleep up to a second (half the sleeps in one of
 * four groups, one at a time each).
 */
function taskInput(n: number, limitedEvery: number) {
  if (n % limitedEvery === 0) return { type: 'demo.fail', payload: { failTimes: n % 3 }, maxAttempts: 5 };
  if (n % limitedEvery === 2) return { type: demoLimited.name, payload: { n } };
  // A parent that enqueues its own three children and waits for them (ctx.enqueueChildren).
  if (n % limitedEvery === 6) return { type: 'demo.sum', payload: { spawn: [n, 1, 2] }, maxAttempts: 10 };
  if (n % 5 === 1) return { type: 'demo.echo', payload: { n } };
  // Half the sleeps in one of four groups, so each group's tasks queue behind each other.
  const group = n % 2 === 0 ? { group: `g${n % 8}` } : {};
  return { type: 'demo.sleep', payload: { ms: 100 + ((n * 37) % 900) }, maxAttempts: 10, ...group };
}

async function finalTasks(store: TaskStore): Promise<FinalTask[]> {
  const doc: DynamoDBDocumentClient = store.ctx.doc;
  const items: FinalTask[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(
      new ScanCommand({ TableName: store.ctx.tableName, ConsistentRead: true, ExclusiveStartKey: startKey }),
    );
    for (const i of out.Items ?? [])
      if (String(i.pk).startsWith('TASK#') && i.sk === 'TASK') items.push(i as unknown as FinalTask);
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/**
 * Tasks not yet finished: only those are in the ready and sweep indexes, so counting the indexes costs
 * in proportion to what is left (a scan of the whole table each poll would starve the harness's dynalite).
 */
async function remaining(store: TaskStore): Promise<number> {
  const depth = await store.depth(TASK_TYPES);
  return depth.ready + depth.leased + depth.delayed;
}
