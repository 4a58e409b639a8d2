/**
 * `npm run sim:idle [-- --minutes N]`: what an idle deployment does and costs, counted in the sim.
 * Starts the sim, lets the first ticks pass, then counts over N minutes (default 3) the invocations
 * and billed duration of each function and every DynamoDB request by function and action, and prices
 * them at us-east-1 on-demand rates; then enqueues a few tasks at random idle moments and times their
 * start. The figures behind the README's idle cost.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { signedCaller } from './signed-caller.js';
import { PRICES } from './prices.js';
import { startSim } from './sim.js';

const MINUTES_PER_MONTH = 43_200;

// The sim's own SDK clients run on this Node; the functions run on their runtime's.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const { values } = parseArgs({
  options: { minutes: { type: 'string' }, warmup: { type: 'string' }, samples: { type: 'string' } },
});
const minutes = Number(values.minutes ?? 3);
const samples = Number(values.samples ?? 3);
const warmupMs = Number(values.warmup ?? 75) * 1000;
const sim = await startSim({
  dataDir: mkdtempSync(join(tmpdir(), 'leasehold-sim-idle-')),
  log: () => undefined,
});
const admin = sim.info.adminUrl;
const state = async (since = 0) =>
  (await (await fetch(`${admin}/state?since=${since}`)).json()) as {
    functions: Record<string, { invocations: number; recent: { startedAt: number; durationMs: number }[] }>;
    requests: Record<string, Record<string, number>>;
  };
process.stdout.write(
  `sim up in ${sim.info.startupMs} ms; warming up ${warmupMs / 1000} s, then counting ${minutes} idle minutes\n`,
);
await new Promise((r) => setTimeout(r, warmupMs));
const from = Date.now();
const before = await state();
await new Promise((r) => setTimeout(r, minutes * 60_000));
const after = await state(from);

// Enqueue-to-start while idle: tasks enqueued at random moments while no worker runs wait for the next tick.
const call = signedCaller(sim.info);
const idleStarts: number[] = [];
for (let i = 0; i < samples; i++) {
  await new Promise((r) => setTimeout(r, 15_000 + Math.random() * 45_000));
  const { task } = (await call('POST', 'tasks', { type: 'demo.echo', payload: i })).body as {
    task: { id: string };
  };
  for (;;) {
    const t = (
      (await call('GET', `tasks/${task.id}`)).body as { task: { startedAt?: string; createdAt: string } }
    ).task;
    if (t.startedAt) {
      idleStarts.push(Date.parse(t.startedAt) - Date.parse(t.createdAt));
      break;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
await sim.close();

const memoryOf: Record<string, number> = { Worker: 256, Recovery: 256, Api: 256, Fire: 256 };
let lambdaCost = 0;
process.stdout.write(`\nper idle minute (${minutes} minutes counted):\n`);
for (const [id, f] of Object.entries(after.functions)) {
  const invocations = f.invocations - (before.functions[id]?.invocations ?? 0);
  const billedMs = f.recent.filter((r) => r.startedAt >= from).reduce((sum, r) => sum + r.durationMs, 0);
  const short = id.replace(/Function\w*$/, '');
  const gbSeconds = (billedMs / 1000) * ((memoryOf[short] ?? 256) / 1024);
  lambdaCost += (gbSeconds * PRICES.lambdaGbSecond + invocations * PRICES.lambdaRequest) / minutes;
  process.stdout.write(
    `  ${short.padEnd(9)} ${(invocations / minutes).toFixed(2)} invocations, ${(billedMs / minutes / 1000).toFixed(1)} s billed\n`,
  );
}
let reads = 0;
let writes = 0;
for (const [principal, actions] of Object.entries(after.requests)) {
  const role = /:assumed-role\/([^/]+)\//.exec(principal)?.[1] ?? principal;
  const dynamo = Object.entries(actions).filter(([a]) => a.startsWith('dynamodb:'));
  if (dynamo.length === 0) continue;
  process.stdout.write(
    `  ${role}: ${dynamo.map(([a, n]) => `${a.slice(9)} ${(n / minutes).toFixed(1)}`).join(', ')}\n`,
  );
  for (const [a, n] of dynamo) {
    if (/Put|Update|Delete|Write/.test(a)) writes += n / minutes;
    else reads += n / minutes;
  }
}
// Upper bound: every read request priced as a strongly consistent read unit, every write as one write unit.
const dynamoCost = reads * PRICES.readUnit + writes * PRICES.writeUnit;
process.stdout.write(
  `\nDynamoDB requests per idle minute: ${reads.toFixed(1)} reads, ${writes.toFixed(1)} writes\n`,
);
process.stdout.write(
  `sim start-up ${(sim.info.startupMs / 1000).toFixed(1)} s (cdk synth included); enqueue-to-start while idle: ${idleStarts.map((ms) => `${(ms / 1000).toFixed(1)} s`).join(', ')}\n`,
);
process.stdout.write(
  `a month idle: Lambda $${(lambdaCost * MINUTES_PER_MONTH).toFixed(2)}, DynamoDB at most $${(dynamoCost * MINUTES_PER_MONTH).toFixed(2)} (every read priced as a full read unit)\n`,
);
