/**
 * `npm run sim:latency [-- --quick]`: how fast work starts and how the fleet scales, in the deployed
 * shape (the sim of what `cdk deploy` creates, default settings):
 * - idle: no worker invocation running; a task enqueued through the signed API is started by the kick
 *   (cold starts included: the sim reaps idle environments after a few seconds for half the samples);
 * - warm: the same with warm execution environments;
 * - burst: 5,000 short tasks (demo.sleep 100 ms) enqueued at once through the API: running worker
 *   invocations and tasks started per second until the backlog is gone, and Lambda invokes per 1,000 tasks;
 * - due: 1,000 tasks enqueued with the same runAt: how long after that instant each starts.
 * Prints the figures and writes them to tools/sim/results/latency.json.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { defineConfig } from '../../shared/config.js';
import { createTaskRuntime } from '../../shared/task-runtime.js';
import { createDocumentClient } from '../../shared/store/dynamo.js';
import { writeTargetOf } from '../../shared/store/context.js';
import { directKick } from '../../shared/client/direct-kick.js';
import { taskDefinitions } from '../../tasks/catalog.js';
import { taskKey } from '../../shared/table-layout.js';
import { signedCaller } from './signed-caller.js';
import { startSim } from './sim.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    samples: { type: 'string' },
    burst: { type: 'string' },
    only: { type: 'string' },
    due: { type: 'string' },
  },
});
const quick = values.quick === true;
const samples = Number(values.samples ?? (quick ? 12 : 50));
const burstSize = Number(values.burst ?? (quick ? 1_000 : 5_000));
const dueCount = Number(values.due ?? 1_000);
const only = values.only?.split(',');
const wants = (part: string) => !only || only.includes(part);

/**
 * Requests in flight while enqueueing a batch: each is an API execution environment, a Node process
 * here (on AWS, API Gateway would fan out to many more); eight keep a 2-core machine's cold starts sane.
 */
const ENQUEUE_CONCURRENCY = 8;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
};
const summary = (xs: number[]) => ({
  n: xs.length,
  p50: pct(xs, 50),
  p90: pct(xs, 90),
  p99: pct(xs, 99),
  max: Math.max(...xs),
});

// A short idle-environment lifetime makes some idle samples cold starts, as after a quiet spell on AWS.
const sim = await startSim({
  dataDir: mkdtempSync(join(tmpdir(), 'leasehold-sim-latency-')),
  idleEnvironmentTtlMs: 4_000,
  log: () => undefined,
});
const call = signedCaller(sim.info);
interface FnState {
  invocations: number;
  coldStarts: number;
  throttles: number;
  environments: { id: string; state: string }[];
  recent: { startedAt: number; coldStart: boolean }[];
}
const workerState = async () => {
  const state = (await (await fetch(`${sim.info.adminUrl}/state`)).json()) as {
    functions: Record<string, FnState>;
  };
  return Object.entries(state.functions).find(([id]) => id.startsWith('Worker'))![1];
};
const busyWorkers = async () => (await workerState()).environments.filter((e) => e.state === 'busy').length;

interface TaskJson {
  id: string;
  createdAt: string;
  startedAt?: string;
}
const enqueue = async (type: string, payload: unknown): Promise<TaskJson> => {
  const res = await call('POST', 'tasks', { type, payload });
  if (res.status !== 201) throw new Error(`enqueue answered ${res.status}: ${JSON.stringify(res.body)}`);
  return (res.body as { task: TaskJson }).task;
};
const startDelay = async (id: string): Promise<number> => {
  for (;;) {
    const t = ((await call('GET', `tasks/${id}`)).body as { task: TaskJson }).task;
    if (t.startedAt) return Date.parse(t.startedAt) - Date.parse(t.createdAt);
    await sleep(50);
  }
};
/** Waits until no worker invocation runs (the scheduled tick's included). */
const untilIdle = async () => {
  while ((await busyWorkers()) > 0) await sleep(100);
};

const results: Record<string, unknown> = { date: new Date().toISOString(), quick, samples, burstSize };
process.stdout.write(`sim up in ${(sim.info.startupMs / 1000).toFixed(1)} s\n`);
try {
  await untilIdle();
  if (wants('idle')) {
    const all: number[] = [];
    const cold: number[] = [];
    for (let i = 0; i < samples; i++) {
      await untilIdle();
      // Half the samples wait past the sim's idle-environment lifetime: their kick meets a cold start.
      await sleep(i % 2 === 0 ? 5_500 + Math.random() * 3_000 : 200 + Math.random() * 800);
      await untilIdle();
      // A cold start shows as an execution environment that was not there before (the counter of
      // cold starts moves only when the invocation ends).
      const before = new Set((await workerState()).environments.map((e) => e.id));
      const ms = await startDelay((await enqueue('demo.echo', i)).id);
      all.push(ms);
      if ((await workerState()).environments.some((e) => !before.has(e.id))) cold.push(ms);
    }
    results.idle = {
      ...summary(all),
      coldStarts: cold.length,
      cold: cold.length ? summary(cold) : undefined,
    };
    process.stdout.write(`idle enqueue-to-start: ${JSON.stringify(results.idle)}\n`);
  }
  if (wants('warm')) {
    const warm: number[] = [];
    for (let i = 0; i < samples; i++) {
      await untilIdle();
      await sleep(100 + Math.random() * 400);
      warm.push(await startDelay((await enqueue('demo.echo', i)).id));
    }
    results.warm = summary(warm);
    process.stdout.write(`warm enqueue-to-start: ${JSON.stringify(results.warm)}\n`);
  }
  if (wants('burst')) results.burst = await burst();
  if (wants('due')) results.due = await dueAtOnce();
} finally {
  await sim.close();
}
mkdirSync('tools/sim/results', { recursive: true });
const file = join('tools/sim/results', quick ? 'latency-quick.json' : 'latency.json');
writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
process.stdout.write(`written to ${file}\n`);

async function burst() {
  await untilIdle();
  const before = await workerState();
  const t0 = Date.now();
  const curve: { s: number; running: number }[] = [];
  let done = false;
  const sampler = (async () => {
    while (!done) {
      curve.push({ s: (Date.now() - t0) / 1000, running: await busyWorkers() });
      await sleep(500);
    }
  })();
  await enqueueAll(burstSize, () => ({ type: 'demo.sleep', payload: { ms: 100 } }));
  const enqueuedMs = Date.now() - t0;
  // Until every task finished and the fleet fell back to nothing running.
  const tasks = () => tableTasks('demo.sleep');
  for (;;) {
    const all = await tasks();
    if (all.length >= burstSize && all.every((t) => t.status === 'SUCCESS')) break;
    if (Date.now() - t0 > 15 * 60_000) throw new Error('the burst did not finish within 15 minutes');
    await sleep(2_000);
  }
  const finishedMs = Date.now() - t0;
  while ((await busyWorkers()) > 0 && Date.now() - t0 < finishedMs + 120_000) await sleep(500);
  const drainedMs = Date.now() - t0;
  done = true;
  await sampler;
  const after = await workerState();
  const started = (await tasks()).map((t) => Number(t.startedAt ?? 0) - t0);
  const perSecond: number[] = [];
  for (const ms of started) perSecond[Math.floor(ms / 1000)] = (perSecond[Math.floor(ms / 1000)] ?? 0) + 1;
  const runningAt = (s: number) =>
    Math.max(0, ...curve.filter((c) => Math.floor(c.s) === s).map((c) => c.running));
  const byS = Array.from({ length: perSecond.length }, (_, s) => ({
    s,
    running: runningAt(s),
    started: perSecond[s] ?? 0,
  }));
  const invocations = after.invocations - before.invocations;
  const out = {
    tasks: burstSize,
    enqueuedInMs: enqueuedMs,
    allFinishedMs: finishedMs,
    fleetBackToZeroMs: drainedMs,
    maxRunning: Math.max(...curve.map((c) => c.running)),
    firstAtMaxS: curve.find((c) => c.running === Math.max(...curve.map((x) => x.running)))?.s,
    workerInvocations: invocations,
    invocationsPer1000Tasks: Math.round((invocations / burstSize) * 1000 * 10) / 10,
    coldStarts: after.coldStarts - before.coldStarts,
    throttles: after.throttles - before.throttles,
    perSecond: byS,
  };
  process.stdout.write(`burst: ${JSON.stringify({ ...out, perSecond: undefined })}\n`);
  process.stdout.write(`  s  running  started\n`);
  for (const r of byS)
    process.stdout.write(
      `${String(r.s).padStart(3)}  ${String(r.running).padStart(7)}  ${String(r.started).padStart(7)}\n`,
    );
  return out;
}

/**
 * Enqueues `n` tasks "at once": all but the last into the table through the library and the sim's
 * DynamoDB gate (the deployed API throttles at 100 requests a second), with the direct client's kick
 * (a script that enqueues with `workerFunctionName` set: each kick hands the fleet the tasks enqueued
 * since the last one, by key), the last through the signed API.
 */
async function enqueueAll(
  n: number,
  body: (i: number) => { type: string; payload: unknown; runAt?: string },
) {
  // Through the gate, signed as the sim's admin: writes that bypass it would never reach the index view
  // its GSI reads answer from (the index lag), and would escape its throttling.
  const admin = sim.info.callers.find((c) => c.name === 'admin')!;
  const config = defineConfig({
    tableName: sim.info.dynamodb.tables[0]!,
    region: sim.info.region,
    dynamodbEndpoint: sim.info.dynamodb.gatedEndpoint,
  });
  const credentials = { accessKeyId: admin.accessKeyId, secretAccessKey: admin.secretAccessKey };
  const runtime = createTaskRuntime(config, taskDefinitions, {
    doc: createDocumentClient(config, { credentials }),
  });
  const kick = directKick({
    functionName: sim.info.functions.find((f) => f.logicalId.startsWith('Worker'))!.name,
    endpoint: sim.info.lambdaEndpoint,
    region: sim.info.region,
    credentials,
    config: runtime.config,
    events: runtime.events,
    clock: runtime.clock,
    table: writeTargetOf(runtime.store.ctx),
  });
  let next = 0;
  const ids: string[] = [];
  await Promise.all(
    Array.from({ length: ENQUEUE_CONCURRENCY }, async () => {
      while (next < n - 1) {
        const { type, payload, runAt } = body(next++);
        const { task } = await runtime.submitter.enqueue({
          type,
          payload,
          owner: 'arn:aws:iam::123456789012:user/sim-admin',
          ...(runAt ? { availableAt: Date.parse(runAt) } : {}),
        });
        ids.push(task.id);
      }
    }),
  );
  await kick?.settled();
  kick?.close();
  runtime.doc.destroy();
  const res = await call('POST', 'tasks', body(n - 1));
  if (res.status !== 201) throw new Error(`enqueue answered ${res.status}: ${JSON.stringify(res.body)}`);
  ids.push((res.body as { task: TaskJson }).task.id);
  return ids;
}

/**
 * When each of these tasks started (undefined: not yet), read by key 100 at a time: while a burst runs
 * the sim's DynamoDB must not also serve a scan of every item in the table.
 */
async function startTimes(ids: string[]): Promise<(number | undefined)[]> {
  const doc = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: sim.info.dynamodb.endpoint,
      region: sim.info.region,
      credentials: { accessKeyId: 'sim', secretAccessKey: 'sim' },
    }),
  );
  const table = sim.info.dynamodb.tables[0]!;
  const started = new Map<string, number | undefined>();
  for (let i = 0; i < ids.length; i += 100) {
    let keys: Record<string, unknown>[] = ids.slice(i, i + 100).map(taskKey);
    while (keys.length > 0) {
      const out = await doc.send(
        new BatchGetCommand({
          RequestItems: { [table]: { Keys: keys, ProjectionExpression: 'id, startedAt' } },
        }),
      );
      for (const item of (out.Responses?.[table] ?? []) as { id: string; startedAt?: number }[])
        started.set(item.id, item.startedAt);
      keys = (out.UnprocessedKeys?.[table]?.Keys ?? []) as Record<string, unknown>[];
    }
  }
  doc.destroy();
  return ids.map((id) => started.get(id));
}

/** Every task item of a type, read from the table directly (the sim's own credentials). */
async function tableTasks(type: string) {
  const doc = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: sim.info.dynamodb.endpoint,
      region: sim.info.region,
      credentials: { accessKeyId: 'sim', secretAccessKey: 'sim' },
    }),
  );
  const items: { status?: string; startedAt?: number; type?: string; sk?: string; payload?: string }[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(
      new ScanCommand({ TableName: sim.info.dynamodb.tables[0]!, ExclusiveStartKey: startKey }),
    );
    items.push(...((out.Items ?? []) as typeof items));
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  doc.destroy();
  return items.filter((i) => i.sk === 'TASK' && i.type === type);
}

/** `dueCount` tasks with the same runAt, enqueued well ahead: how long after it each starts. */
async function dueAtOnce() {
  await untilIdle();
  const at = Date.now() + 45_000;
  const marker = `due-${at}`;
  const ids = await enqueueAll(dueCount, (i) => ({
    type: 'demo.echo',
    payload: { marker, i },
    runAt: new Date(at).toISOString(),
  }));
  const enqueuedBeforeMs = at - Date.now();
  if (enqueuedBeforeMs < 10_000)
    throw new Error(`enqueueing took too long: ${enqueuedBeforeMs} ms left before the instant`);
  await sleep(at - Date.now());
  let started: (number | undefined)[];
  for (;;) {
    await sleep(2_000);
    started = await startTimes(ids);
    if (started.every((s) => s !== undefined)) break;
    if (Date.now() - at > 5 * 60_000) throw new Error('the due tasks did not all start within 5 minutes');
  }
  const late = started.map((s) => s! - at);
  const out = { tasks: dueCount, enqueuedBeforeMs, ...summary(late), earliest: Math.min(...late) };
  process.stdout.write(`due at one instant: ${JSON.stringify(out)}\n`);
  return out;
}
