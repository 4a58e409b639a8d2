/**
 * `npm run sim:cost [-- --quick] [-- --rates 0.1,1,5] [-- --minutes N]`: what a steady stream of tasks
 * costs in the deployed shape (the sim of what `cdk deploy` creates, default settings, every strict
 * behaviour on). For each rate it enqueues `demo.echo` tasks through the signed HTTP API at that rate
 * for N minutes (default 4; 1.5 with --quick), after a warm-up at the first rate (default 75 s,
 * uncounted), and counts, over exactly that window, every DynamoDB request the functions made
 * (polling, kicks, seats and timekeeping included), the read and write units they consumed (table and
 * GSIs, as on-demand bills them), and each function's billed Lambda duration (init included) and
 * invocations. It prices them at us-east-1 on-demand rates (ARM Lambda) per task, per hour and per
 * month at that rate, and per million tasks, and writes tools/sim/results/cost.json. API Gateway's $1 per
 * million HTTP API requests is listed beside, not in, the Lambda + DynamoDB figure.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { signedCaller } from './signed-caller.js';
import { PRICES } from './prices.js';
import { startSim } from './sim.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const HOURS_PER_MONTH = 730;

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    rates: { type: 'string' },
    minutes: { type: 'string' },
    warmup: { type: 'string' },
  },
});
const quick = values.quick === true;
const rates = (values.rates ?? '0.1,1,5').split(',').map(Number);
const minutes = Number(values.minutes ?? (quick ? 1.5 : 4));
const warmupMs = Number(values.warmup ?? 75) * 1000;
if (rates.some((r) => !(r > 0)) || !(minutes > 0))
  throw new Error(
    '--rates must be positive numbers (tasks a second, comma-separated) and --minutes positive',
  );

interface FunctionCounts {
  invocations: number;
  billedMs: number;
  memoryMb: number;
}
interface State {
  functions: Record<string, FunctionCounts>;
  requests: Record<string, Record<string, number>>;
  dynamodb: { throttled: { consumed: { readUnits: number; writeUnits: number } } };
}

const sim = await startSim({
  dataDir: mkdtempSync(join(tmpdir(), 'leasehold-sim-cost-')),
  log: () => undefined,
});
const call = signedCaller(sim.info);
const state = async () => (await (await fetch(`${sim.info.adminUrl}/state`)).json()) as State;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** DynamoDB requests the stack's functions made (the roles' principals), by action. */
function dynamoRequests(s: State): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [principal, actions] of Object.entries(s.requests)) {
    if (!principal.includes(':assumed-role/')) continue;
    for (const [action, n] of Object.entries(actions))
      if (action.startsWith('dynamodb:')) out[action.slice(9)] = (out[action.slice(9)] ?? 0) + n;
  }
  return out;
}

/** Enqueues at `rate` tasks a second for `ms`, one request each, on a fixed timetable (no drift). */
async function enqueueSteadily(rate: number, ms: number): Promise<number> {
  const start = Date.now();
  const count = Math.round((rate * ms) / 1000);
  const sent: Promise<unknown>[] = [];
  for (let i = 0; i < count; i++) {
    await sleep(Math.max(0, start + (i * 1000) / rate - Date.now()));
    sent.push(
      call('POST', 'tasks', { type: 'demo.echo', payload: { i } }).then((a) => {
        if (a.status !== 201) throw new Error(`enqueue answered ${a.status}: ${JSON.stringify(a.body)}`);
      }),
    );
  }
  await sleep(Math.max(0, start + ms - Date.now()));
  await Promise.all(sent);
  return count;
}

process.stdout.write(
  `sim up in ${(sim.info.startupMs / 1000).toFixed(1)} s; warming up ${warmupMs / 1000} s, then ${minutes} minutes at each of ${rates.join(', ')} tasks a second\n`,
);
// The warm-up runs at the first rate, uncounted: each function has started its environments and
// recovery has swept by then, so the window measures the steady state, not the first cold starts
// (a 256 MB init of about 2 s is as much Lambda time as a few dozen warm enqueues).
await enqueueSteadily(rates[0]!, warmupMs);
const results = [];
for (const rate of rates) {
  const before = await state();
  const from = Date.now();
  const tasks = await enqueueSteadily(rate, minutes * 60_000);
  const after = await state();
  const hours = (Date.now() - from) / 3_600_000;
  const requestsBefore = dynamoRequests(before);
  const requestsByAction = Object.fromEntries(
    Object.entries(dynamoRequests(after)).map(([a, n]) => [a, n - (requestsBefore[a] ?? 0)]),
  );
  const requests = Object.values(requestsByAction).reduce((a, b) => a + b, 0);
  const readUnits =
    after.dynamodb.throttled.consumed.readUnits - before.dynamodb.throttled.consumed.readUnits;
  const writeUnits =
    after.dynamodb.throttled.consumed.writeUnits - before.dynamodb.throttled.consumed.writeUnits;
  const lambda: Record<string, { invocations: number; gbSeconds: number }> = {};
  for (const [id, f] of Object.entries(after.functions)) {
    const b = before.functions[id];
    lambda[id.replace(/Function\w*$/, '')] = {
      invocations: f.invocations - (b?.invocations ?? 0),
      gbSeconds: ((f.billedMs - (b?.billedMs ?? 0)) / 1000) * (f.memoryMb / 1024),
    };
  }
  const gbSeconds = Object.values(lambda).reduce((a, f) => a + f.gbSeconds, 0);
  const invocations = Object.values(lambda).reduce((a, f) => a + f.invocations, 0);
  const dynamoDollars = readUnits * PRICES.readUnit + writeUnits * PRICES.writeUnit;
  const lambdaDollars = gbSeconds * PRICES.lambdaGbSecond + invocations * PRICES.lambdaRequest;
  const perTask = (x: number) => x / tasks;
  const result = {
    ratePerSecond: rate,
    minutes,
    tasks,
    perTask: {
      dynamodbRequests: perTask(requests),
      readUnits: perTask(readUnits),
      writeUnits: perTask(writeUnits),
      lambdaGbSeconds: perTask(gbSeconds),
      lambdaInvocations: perTask(invocations),
    },
    perHour: {
      dynamodbRequests: requests / hours,
      readUnits: readUnits / hours,
      writeUnits: writeUnits / hours,
      lambdaGbSeconds: gbSeconds / hours,
    },
    dollarsPerMillionTasks: {
      lambda: (lambdaDollars / tasks) * 1e6,
      dynamodb: (dynamoDollars / tasks) * 1e6,
      total: ((lambdaDollars + dynamoDollars) / tasks) * 1e6,
      apiGatewayBeside: PRICES.httpApiRequest * 1e6,
    },
    dollarsPerMonth: {
      lambda: (lambdaDollars / hours) * HOURS_PER_MONTH,
      dynamodb: (dynamoDollars / hours) * HOURS_PER_MONTH,
      total: ((lambdaDollars + dynamoDollars) / hours) * HOURS_PER_MONTH,
    },
    requestsByAction,
    lambdaByFunction: lambda,
  };
  results.push(result);
  const f = (x: number, d = 2) => x.toFixed(d);
  process.stdout.write(
    [
      ``,
      `${rate} tasks a second, ${minutes} minutes, ${tasks} tasks:`,
      `  per task: ${f(result.perTask.dynamodbRequests, 1)} DynamoDB requests (${Object.entries(
        requestsByAction,
      )
        .map(([a, n]) => `${a} ${f(n / tasks, 2)}`)
        .join(
          ', ',
        )}), ${f(result.perTask.readUnits)} read units, ${f(result.perTask.writeUnits)} write units, ` +
        `${f(result.perTask.lambdaGbSeconds, 3)} Lambda GB-s, ${f(result.perTask.lambdaInvocations)} invocations`,
      `  per hour: ${f(result.perHour.dynamodbRequests, 0)} requests, ${f(result.perHour.readUnits, 0)} RRU, ${f(result.perHour.writeUnits, 0)} WRU, ${f(result.perHour.lambdaGbSeconds, 1)} GB-s`,
      `  $ per million tasks: Lambda ${f(result.dollarsPerMillionTasks.lambda)} + DynamoDB ${f(result.dollarsPerMillionTasks.dynamodb)} = ${f(result.dollarsPerMillionTasks.total)} (API Gateway ${f(result.dollarsPerMillionTasks.apiGatewayBeside)} beside)`,
      `  $ per month at this rate: Lambda ${f(result.dollarsPerMonth.lambda)} + DynamoDB ${f(result.dollarsPerMonth.dynamodb)} = ${f(result.dollarsPerMonth.total)}`,
      `  Lambda by function: ${Object.entries(lambda)
        .map(([id, l]) => `${id} ${l.invocations} invocations ${f(l.gbSeconds, 1)} GB-s`)
        .join(', ')}`,
    ].join('\n') + '\n',
  );
  await sleep(10_000);
}
await sim.close();
const outDir = join(process.cwd(), 'sim', 'results');
mkdirSync(outDir, { recursive: true });
writeFileSync(
  join(outDir, 'cost.json'),
  `${JSON.stringify({ at: new Date().toISOString(), quick, prices: PRICES, results }, null, 2)}\n`,
);
process.stdout.write(`\nwritten to tools/sim/results/cost.json\n`);
