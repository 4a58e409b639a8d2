/**
 * `npm run sim:batch [-- --tasks N] [-- --quick]`: enqueueing one task per request against batches, in
 * the deployed shape (the sim of what `cdk deploy` creates, default settings): the typed HTTP client,
 * signed with SigV4 as the sim's admin caller, through API Gateway (its stage throttle included) to
 * the API Lambda and DynamoDB Local. Each way sends N tasks (default 1,000; 200 with --quick):
 * - one by one: `client.enqueue('demo.echo', ...)`, one request in flight;
 * - batches: `client.enqueueMany(...)`, batches of up to 100, 1 in flight, then 2 (the client's default).
 * Every task carries an idempotency key (the client makes one per task). The tasks are due at once, as
 * a producer's usually are, so each enqueue may kick a worker, as deployed; the worker invocations are
 * shown apart, and each way waits for the fleet to fall idle before it starts.
 * Prints tasks per second, HTTP requests per task (every attempt the client sent, retries included),
 * Lambda invocations per task (the API function's, the workers') and DynamoDB requests per task (the
 * API function's role, and all), and writes them to tools/sim/results/batch.json.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createClient } from '../../shared/client/http-client.js';
import { startSim } from './sim.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const { values } = parseArgs({ options: { quick: { type: 'boolean' }, tasks: { type: 'string' } } });
const quick = values.quick === true;
const tasks = Number(values.tasks ?? (quick ? 200 : 1_000));
const WARM = 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;

interface FnState {
  invocations: number;
  coldStarts: number;
  throttles: number;
  environments: { id: string; state: string }[];
}
interface SimStateView {
  functions: Record<string, FnState>;
  requests: Record<string, Record<string, number>>;
}

const sim = await startSim({
  dataDir: mkdtempSync(join(tmpdir(), 'leasehold-sim-batch-')),
  log: () => undefined,
});
const admin = sim.info.callers.find((c) => c.name === 'admin');
if (!admin) throw new Error('the sim has no admin caller');

/** Every attempt the client sends, its retries included (a 429 from the stage throttle is sent again). */
let httpRequests = 0;
let throttled = 0;
const countingFetch: typeof fetch = async (input, init) => {
  httpRequests++;
  const res = await fetch(input, init);
  if (res.status === 429) throttled++;
  return res;
};
const client = createClient({
  url: sim.info.apiUrl,
  region: sim.info.region,
  credentials: {
    accessKeyId: admin.accessKeyId,
    secretAccessKey: admin.secretAccessKey,
    ...(admin.sessionToken ? { sessionToken: admin.sessionToken } : {}),
  },
  fetch: countingFetch,
});

const state = async (since?: number) =>
  (await (
    await fetch(`${sim.info.adminUrl}/state${since === undefined ? '' : `?since=${since}`}`)
  ).json()) as SimStateView;
const functionOf = (s: SimStateView, prefix: string) => {
  const entry = Object.entries(s.functions).find(([id]) => id.startsWith(prefix));
  if (!entry)
    throw new Error(`the sim has no function ${prefix}*; it has ${Object.keys(s.functions).join(', ')}`);
  return entry[1];
};
const busyWorkers = async () =>
  functionOf(await state(), 'Worker').environments.filter((e) => e.state === 'busy').length;
/** Until no worker invocation runs (the kicked ones and the scheduled tick's). */
const untilIdle = async () => {
  const until = Date.now() + 120_000;
  while ((await busyWorkers()) > 0 && Date.now() < until) await sleep(200);
};

interface WayFigures {
  tasks: number;
  elapsedMs: number;
  tasksPerS: number;
  httpRequests: number;
  httpRequestsPerTask: number;
  throttled429: number;
  apiInvocations: number;
  apiInvocationsPerTask: number;
  apiColdStarts: number;
  workerInvocations: number;
  workerInvocationsPerTask: number;
  /** DynamoDB requests signed by the API function's role, per task; all its requests by action (its kicks' Invokes and fleet reads included). */
  apiDynamoRequestsPerTask: number;
  apiRequestsByAction: Record<string, number>;
  /** Every principal's requests over the run (the workers running the tasks included), by principal and action. */
  requestsByPrincipal: Record<string, Record<string, number>>;
}

/** Sends `tasks` tasks the way `send` does and counts what it took. */
async function measureWay(label: string, send: (run: string) => Promise<number>): Promise<WayFigures> {
  await untilIdle();
  const before = await state();
  const from = Date.now();
  const sentBefore = httpRequests;
  const throttledBefore = throttled;
  const started = performance.now();
  const created = await send(label);
  const elapsedMs = performance.now() - started;
  if (created !== tasks) throw new Error(`${label}: ${created} of ${tasks} tasks created`);
  const requestsSent = httpRequests - sentBefore;
  // The API's invocations are over when the last answer is in; the kicked workers' may still run.
  const afterApi = await state(from);
  await untilIdle();
  const after = await state(from);
  const api = (s: SimStateView) => functionOf(s, 'Api');
  const worker = (s: SimStateView) => functionOf(s, 'Worker');
  // The API function's requests are signed with its role's session (assumed-role/<stack>-ApiRole.../...).
  const apiRole = Object.keys(afterApi.requests).find((arn) => /:assumed-role\/[^/]*ApiRole/.test(arn));
  if (!apiRole)
    throw new Error(`no requests by the API function's role: ${Object.keys(afterApi.requests).join(', ')}`);
  const apiByAction = afterApi.requests[apiRole]!;
  const apiDynamo = Object.fromEntries(
    Object.entries(apiByAction).filter(([action]) => action.startsWith('dynamodb:')),
  );
  const apiDynamoRequests = Object.values(apiDynamo).reduce((a, b) => a + b, 0);
  const figures: WayFigures = {
    tasks,
    elapsedMs: round(elapsedMs, 1),
    tasksPerS: round(tasks / (elapsedMs / 1000), 1),
    httpRequests: requestsSent,
    httpRequestsPerTask: round(requestsSent / tasks, 4),
    throttled429: throttled - throttledBefore,
    apiInvocations: api(afterApi).invocations - api(before).invocations,
    apiInvocationsPerTask: round((api(afterApi).invocations - api(before).invocations) / tasks, 4),
    apiColdStarts: api(afterApi).coldStarts - api(before).coldStarts,
    workerInvocations: worker(after).invocations - worker(before).invocations,
    workerInvocationsPerTask: round((worker(after).invocations - worker(before).invocations) / tasks, 4),
    apiDynamoRequestsPerTask: round(apiDynamoRequests / tasks, 4),
    apiRequestsByAction: apiByAction,
    requestsByPrincipal: after.requests,
  };
  process.stdout.write(
    `${label}: ${figures.tasksPerS} tasks/s; ${figures.httpRequestsPerTask} HTTP requests a task (${figures.throttled429} throttled); ${figures.apiInvocationsPerTask} API invocations a task (${figures.apiColdStarts} cold); ${figures.workerInvocationsPerTask} worker invocations a task; ${figures.apiDynamoRequestsPerTask} DynamoDB requests a task by the API; the API's requests ${JSON.stringify(apiByAction)}\n`,
  );
  return figures;
}

const oneByOne = async (run: string) => {
  let created = 0;
  for (let i = 0; i < tasks; i++) {
    const answer = await client.enqueue('demo.echo', { run, i });
    if (answer.created) created++;
  }
  return created;
};
const batches = (concurrency: number) => async (run: string) => {
  const answer = await client.enqueueMany(
    Array.from({ length: tasks }, (_, i) => ({ type: 'demo.echo', payload: { run, i } })),
    { concurrency, keepOutcomes: false },
  );
  if (answer.failed > 0) throw new Error(`${run}: ${answer.failed} tasks failed`);
  return answer.created;
};

const results: Record<string, unknown> = { date: new Date().toISOString(), quick, tasks };
process.stdout.write(`sim up in ${(sim.info.startupMs / 1000).toFixed(1)} s; ${tasks} tasks each way\n`);
try {
  // Warm: the API function's first environment and the client's connections are not what is compared.
  for (let i = 0; i < WARM; i++) await client.enqueue('demo.echo', { warm: i });
  await client.enqueueMany(
    Array.from({ length: 100 }, (_, i) => ({ type: 'demo.echo', payload: { warmBatch: i } })),
  );
  const single = await measureWay('one by one, 1 in flight', oneByOne);
  const batch = await measureWay('batches of 100, 1 in flight', batches(1));
  const batchParallel = await measureWay('batches of 100, 2 in flight', batches(2));
  results.oneByOne = single;
  results.batches = batch;
  results.batchesTwoInFlight = batchParallel;
  results.ratio = round(batch.tasksPerS / single.tasksPerS, 2);
  results.ratioTwoInFlight = round(batchParallel.tasksPerS / single.tasksPerS, 2);
  process.stdout.write(
    `tasks/s ratio, batches / one by one (1 in flight each): ${String(results.ratio)}; batches 2 in flight / one by one: ${String(results.ratioTwoInFlight)}\n`,
  );
} finally {
  await sim.close();
}
mkdirSync('tools/sim/results', { recursive: true });
const file = join('tools/sim/results', quick ? 'batch-quick.json' : 'batch.json');
writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
process.stdout.write(`written to ${file}\n`);
