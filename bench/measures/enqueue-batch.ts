/**
 * Measure 11: enqueueing through the HTTP API one task per request (POST /tasks) against batches of
 * 100 (POST /tasks/batch), through the local stack as a user runs it: `leasehold serve --api` in a
 * process of its own (the same handler as the Lambda), on dynalite in another, and this process as the
 * producer beside them, sending over HTTP. Every task carries an idempotency key, as a client that
 * retries safely sends it.
 *
 * Tasks per second are timed with the stack talking to dynalite directly. The stack's DynamoDB
 * requests cannot be counted with SDK middleware from here, so each way of sending is run a second
 * time, on fewer tasks, by a stack whose DynamoDB endpoint is a counting proxy in this process (the
 * proxy's hop would slow the timed runs, so it is kept out of them). The timed runs are checked
 * instead: every answer says created, and the table holds exactly the tasks sent.
 *
 * LEASEHOLD_BENCH_PROFILE_DIR=<dir>: the timed stacks run under `node --cpu-prof` and write their
 * profiles there (for looking into the API's CPU time per task).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { BATCH_CONCURRENCY } from '../../shared/api/batch-enqueue.js';
import { OWNER_HEADER } from '../../shared/api/caller.js';
import { MAX_BATCH_TASKS } from '../../shared/api/request-schemas.js';
import { startNodeProcess, type NodeProcess } from '../../test/support/node-process.js';
import { sum } from '../bench-runtime.js';
import { measure, round, type BenchContext, type Measure } from '../measure.js';

const GROUP = '11. batch enqueue';
/** A type of the stack's own catalog (tasks/catalog.ts) whose handler does nothing but return its payload. */
const TASK_TYPE = 'demo.echo';
/**
 * What the enqueue path sends. The stack's schedule ticker also reads the schedules once a second
 * (a Query), whatever the load: counted and shown by operation, but not charged to the tasks.
 */
const ENQUEUE_OPERATIONS = new Set(['PutItem', 'GetItem', 'UpdateItem', 'DeleteItem']);

/** How one run sends its tasks: `perRequest` tasks a request, `inFlight` requests at a time. */
interface Mode {
  label: string;
  perRequest: number;
  inFlight: number;
}

const MODES: Mode[] = [
  { label: 'one by one, 1 in flight', perRequest: 1, inFlight: 1 },
  { label: 'one by one, 8 in flight', perRequest: 1, inFlight: 8 },
  { label: `batches of ${MAX_BATCH_TASKS}, 1 in flight`, perRequest: MAX_BATCH_TASKS, inFlight: 1 },
  { label: `batches of ${MAX_BATCH_TASKS}, 2 in flight`, perRequest: MAX_BATCH_TASKS, inFlight: 2 },
];

interface RunFigures {
  tasks: number;
  rounds: number;
  elapsedMs: number;
  tasksPerS: number;
  httpRequests: number;
  /** CPU time of the stack process over the timed rounds, per task (ms). */
  stackCpuMsPerTask: number;
  /** Task items in the timed table afterwards (the warm-up's and the run's). */
  tableItems: number;
  /** The counting run: its tasks, the DynamoDB requests its stack sent (all, by operation) and those of the enqueue path. */
  countedTasks: number;
  dynamoRequests: number;
  dynamoByOperation: Record<string, number>;
}

export async function batchEnqueue(ctx: BenchContext): Promise<Measure[]> {
  const tasks = ctx.quick ? 2_000 : 10_000;
  const rounds = ctx.quick ? 2 : 5;
  const warm = 200;
  const counted = ctx.quick ? 400 : 1_000;
  const dataRoot = await mkdtemp(join(tmpdir(), 'leasehold-bench-enqueue-'));
  const figures = new Map<string, RunFigures>();
  try {
    // Each way of sending has a table and a stack process of its own (a table's size changes
    // dynalite's speed), and the ways take turns, a share of the tasks each round, so a busy spell on
    // a shared machine falls on all of them rather than on one.
    const lanes = await Promise.all(
      MODES.map((mode, i) =>
        openLane(ctx.endpoint, mode, join(dataRoot, `timed-${i}`), process.env.LEASEHOLD_BENCH_PROFILE_DIR),
      ),
    );
    try {
      // Warm: connections, JIT and dynalite's first writes are not what is compared.
      for (const lane of lanes) await sendAll(lane.url, 'warm', 0, warm, lane.mode);
      for (let turn = 0; turn < rounds; turn++) {
        const from = Math.floor((tasks * turn) / rounds);
        const to = Math.floor((tasks * (turn + 1)) / rounds);
        for (const lane of lanes) {
          const cpu = processCpuMs(lane.stack.child.pid!);
          const started = performance.now();
          lane.httpRequests += await sendAll(lane.url, 'run', from, to, lane.mode);
          lane.elapsedMs += performance.now() - started;
          lane.cpuMs += processCpuMs(lane.stack.child.pid!) - cpu;
        }
      }
      for (const lane of lanes) lane.tableItems = await countItems(ctx.endpoint, lane.tableName);
    } finally {
      await Promise.all(lanes.map((lane) => lane.close()));
    }
    for (const lane of lanes) {
      if (lane.tableItems !== tasks + warm)
        throw new Error(`${lane.mode.label}: the table holds ${lane.tableItems} items, not ${tasks + warm}`);
    }

    // The counting runs: the same ways of sending, each by a stack whose DynamoDB is behind the counting proxy.
    const proxy = await startCountingProxy(ctx.endpoint);
    try {
      for (const [i, mode] of MODES.entries()) {
        const lane = await openLane(proxy.url, mode, join(dataRoot, `counted-${i}`));
        try {
          await sendAll(lane.url, 'warm', 0, warm, mode);
          proxy.counts.clear();
          await sendAll(lane.url, 'run', 0, counted, mode);
          const byOperation = Object.fromEntries(proxy.counts);
          const timed = lanes[i]!;
          figures.set(mode.label, {
            tasks,
            rounds,
            elapsedMs: round(timed.elapsedMs, 1),
            tasksPerS: round(tasks / (timed.elapsedMs / 1000), 1),
            httpRequests: timed.httpRequests,
            stackCpuMsPerTask: round(timed.cpuMs / tasks, 3),
            tableItems: timed.tableItems,
            countedTasks: counted,
            dynamoRequests: sum(
              Object.entries(byOperation)
                .filter(([op]) => ENQUEUE_OPERATIONS.has(op))
                .map(([, n]) => n),
            ),
            dynamoByOperation: byOperation,
          });
        } finally {
          await lane.close();
        }
      }
    } finally {
      await proxy.close();
    }
  } finally {
    await rm(dataRoot, { recursive: true, force: true });
  }
  for (const [label, run] of figures)
    ctx.log(
      `${label}: ${run.tasksPerS} tasks/s, ${run.httpRequests} HTTP requests, stack CPU ${run.stackCpuMsPerTask} ms a task; counting run: ${run.dynamoRequests} DynamoDB requests for ${run.countedTasks} tasks ${JSON.stringify(run.dynamoByOperation)}`,
    );
  const [single, singleParallel, batch, batchParallel] = MODES.map((m) => figures.get(m.label)!);
  const results: Measure[] = MODES.flatMap((mode) => {
    const run = figures.get(mode.label)!;
    const parameters = { ...run, perRequest: mode.perRequest, inFlight: mode.inFlight };
    return [
      measure({
        group: GROUP,
        name: `enqueue tasks/s, ${mode.label}`,
        value: run.tasksPerS,
        unit: 'tasks/s',
        parameters,
      }),
      measure({
        group: GROUP,
        name: `HTTP requests per task, ${mode.label}`,
        value: round(run.httpRequests / tasks, 4),
        unit: 'requests',
        parameters,
      }),
      measure({
        group: GROUP,
        name: `DynamoDB requests per task, ${mode.label}`,
        value: round(run.dynamoRequests / run.countedTasks, 4),
        unit: 'requests',
        // A batch saves HTTP requests, not writes: each task is still its own conditional put.
        target: { op: '<=', value: 1 },
        parameters,
        note: `counted on a run of ${run.countedTasks} tasks through a counting proxy; the stack's schedule ticker's Query each second is in dynamoByOperation, not in the figure`,
      }),
    ];
  });
  results.push(
    measure({
      group: GROUP,
      name: `tasks/s ratio, batches of ${MAX_BATCH_TASKS} / one by one, 1 in flight each`,
      value: round(batch!.tasksPerS / single!.tasksPerS, 2),
      unit: 'ratio',
      target: { op: '>=', value: 3 },
      parameters: {
        tasks,
        batchTasksPerS: batch!.tasksPerS,
        singleTasksPerS: single!.tasksPerS,
        batchConcurrency: BATCH_CONCURRENCY,
        batchStackCpuMsPerTask: batch!.stackCpuMsPerTask,
        singleStackCpuMsPerTask: single!.stackCpuMsPerTask,
      },
    }),
    measure({
      group: GROUP,
      name: `tasks/s ratio, batches of ${MAX_BATCH_TASKS} 2 in flight / one by one 8 in flight`,
      value: round(batchParallel!.tasksPerS / singleParallel!.tasksPerS, 2),
      unit: 'ratio',
      parameters: {
        tasks,
        batchTasksPerS: batchParallel!.tasksPerS,
        singleTasksPerS: singleParallel!.tasksPerS,
      },
    }),
  );
  return results;
}

interface Lane {
  mode: Mode;
  url: string;
  tableName: string;
  stack: NodeProcess;
  elapsedMs: number;
  cpuMs: number;
  httpRequests: number;
  tableItems: number;
  close(): Promise<void>;
}

let lanes = 0;

/**
 * `leasehold serve --api` in a process of its own on a fresh table at `endpoint`: the user's `npm start`
 * with only the API role (no worker claims the tasks while they are counted), default settings.
 */
async function openLane(endpoint: string, mode: Mode, dataDir: string, profileDir?: string): Promise<Lane> {
  const tableName = `bench-enqueue-${mode.perRequest}x${mode.inFlight}-${++lanes}-${Date.now()}`;
  const stack = await startNodeProcess(
    [
      ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${resolve(profileDir)}`] : []),
      '--import',
      'tsx',
      'tools/cli/leasehold.ts',
      'serve',
      '--api',
    ],
    {
      env: {
        ...process.env,
        LEASEHOLD_PORT: '0',
        LEASEHOLD_DYNAMODB_ENDPOINT: endpoint,
        LEASEHOLD_TABLE: tableName,
        LEASEHOLD_DATA_DIR: dataDir,
        POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'ERROR',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
      ready: /^Ctrl-C stops it/m,
      what: 'the local stack',
      timeoutMs: 60_000,
    },
  );
  const url = /listening on (http:\/\/\S+)/.exec(stack.output())?.[1];
  if (!url) {
    stack.child.kill('SIGKILL');
    throw new Error(`the local stack printed no API address:\n${stack.output()}`);
  }
  return {
    mode,
    url,
    tableName,
    stack,
    elapsedMs: 0,
    cpuMs: 0,
    httpRequests: 0,
    tableItems: 0,
    close: async () => {
      stack.child.kill('SIGTERM');
      const code = await stack.exited;
      if (code !== 0 && code !== null)
        throw new Error(`the local stack exited with ${code}:\n${stack.output().slice(-2_000)}`);
    },
  };
}

/** User plus system CPU time of a process so far, in ms (Linux /proc; NaN elsewhere). */
function processCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

/** Items in a table (a consistent count scan). */
async function countItems(endpoint: string, tableName: string): Promise<number> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
  });
  try {
    let count = 0;
    let start: Record<string, never> | undefined;
    do {
      const out = await client.send(
        new ScanCommand({
          TableName: tableName,
          Select: 'COUNT',
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      count += out.Count ?? 0;
      start = out.LastEvaluatedKey as typeof start;
    } while (start);
    return count;
  } finally {
    client.destroy();
  }
}

interface CountingProxy {
  url: string;
  /** Requests passed on, by DynamoDB operation (X-Amz-Target). */
  counts: Map<string, number>;
  close(): Promise<void>;
}

/** An HTTP proxy to `target` that counts each request it passes on by its DynamoDB operation. */
async function startCountingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target);
  const agent = new Agent({ keepAlive: true });
  const counts = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const op = String(req.headers['x-amz-target'] ?? 'unknown').replace(/^DynamoDB_\d+\./, '');
    counts.set(op, (counts.get(op) ?? 0) + 1);
    const forward = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}

/**
 * Sends tasks `from` to `to` (exclusive) as `mode` says, each answered as created (anything else stops
 * the run: a figure of failed enqueues would be no figure). Returns the HTTP requests sent.
 */
async function sendAll(url: string, run: string, from: number, to: number, mode: Mode): Promise<number> {
  const chunks: number[][] = [];
  for (let n = from; n < to; n += mode.perRequest)
    chunks.push(Array.from({ length: Math.min(mode.perRequest, to - n) }, (_, i) => n + i));
  let next = 0;
  await Promise.all(
    Array.from({ length: mode.inFlight }, async () => {
      while (next < chunks.length) {
        const chunk = chunks[next++]!;
        const bodies = chunk.map((n) => ({
          type: TASK_TYPE,
          payload: { n },
          idempotencyKey: `${run}#${n}`,
        }));
        if (mode.perRequest === 1) await post(url, '/tasks', bodies[0], 201);
        else {
          const answer = (await post(url, '/tasks/batch', { tasks: bodies }, 200)) as { created: number };
          if (answer.created !== chunk.length)
            throw new Error(
              `a batch created ${answer.created} of ${chunk.length} tasks: ${JSON.stringify(answer)}`,
            );
        }
      }
    }),
  );
  return chunks.length;
}

async function post(url: string, path: string, body: unknown, expected: number): Promise<unknown> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [OWNER_HEADER]: 'bench' },
    body: JSON.stringify(body),
  });
  const answer = (await res.json()) as unknown;
  if (res.status !== expected)
    throw new Error(`POST ${path} answered ${res.status}, not ${expected}: ${JSON.stringify(answer)}`);
  return answer;
}
