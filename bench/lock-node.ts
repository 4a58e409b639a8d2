/**
 * One node of measure 6 (bench/measures/locks.ts), in a process of its own so the three nodes do not
 * share an event loop: `loops` acquire+release loops on the lock API for `durationMs`.
 * Args: <endpoint> <tableName> <distinct|shared> <loops> <durationMs>. Prints "ready", waits for a
 * "start" line on stdin (so all nodes begin together), then prints one JSON summary line.
 */
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { defineConfig } from '../shared/config.js';
import { LockClient, LockNotAcquiredError, type LockOptions } from '../shared/locks/lock-client.js';
import { createDynamoClient, documentClientFor } from '../shared/store/dynamo.js';
import { BENCH_CONFIG } from './bench-runtime.js';
import { sleep } from './measure.js';
import type { LockNodeSummary } from './measures/locks.js';

const [endpoint, tableName, scenario, loopsArg, durationArg] = process.argv.slice(2);
const loops = Number(loopsArg);
const durationMs = Number(durationArg);
if (
  !endpoint ||
  !tableName ||
  (scenario !== 'distinct' && scenario !== 'shared') ||
  !(loops > 0) ||
  !(durationMs > 0)
) {
  console.error('usage: lock-node.ts <endpoint> <tableName> <distinct|shared> <loops> <durationMs>');
  process.exit(2);
}

// The parent built the table with BENCH_CONFIG: short deadline and skew margin, so a lock whose
// release failed blocks the shared key for about two seconds rather than ten.
const config = defineConfig({ ...BENCH_CONFIG, tableName, dynamodbEndpoint: endpoint });
const client = createDynamoClient(config);
const locks = new LockClient({ doc: documentClientFor(client), config });
// Released at once, so the lease only matters when a release fails; kept short for that case.
const LEASE: LockOptions = { leaseMs: 1_000, mode: 'fixed', retries: 0 };

// Warm-up outside the measured time: module loading and the first connection.
await (await locks.acquire(`bench-warmup-${process.pid}`, LEASE)).release();
console.log('ready');
const stdin = createInterface({ input: process.stdin });
let started = false;
for await (const line of stdin) {
  if (line.trim() === 'start') {
    started = true;
    break;
  }
}
stdin.close();
if (!started) process.exit(1);

const counts: LockNodeSummary = {
  attempts: 0,
  acquired: 0,
  conflicts: 0,
  lostReleases: 0,
  errors: 0,
  elapsedMs: 0,
};
const begin = performance.now();
const until = begin + durationMs;
await Promise.all(
  Array.from({ length: loops }, async (_, loop) => {
    // Distinct: each loop reuses a key of its own, so a conflict there can only come from the lock
    // itself (a release that did not land), not from another contender.
    const key = scenario === 'shared' ? 'bench-shared' : `bench-${process.pid}-${loop}`;
    while (performance.now() < until) {
      counts.attempts++;
      try {
        const lock = await locks.acquire(key, LEASE);
        counts.acquired++;
        if (!(await lock.release())) counts.lostReleases++;
      } catch (error) {
        if (error instanceof LockNotAcquiredError) counts.conflicts++;
        else {
          counts.errors++;
          counts.firstError ??= String(error);
          await sleep(10); // a refused connection fails at once; do not spin on it
        }
      }
    }
  }),
);
counts.elapsedMs = Math.round(performance.now() - begin);
client.destroy();
console.log(JSON.stringify(counts));
