/**
 * The process measure 8 (bench/measures/memory.ts) watches: bundled and run by plain
 * `node --expose-gc memory-worker.cjs <endpoint> <tasks>`, so neither tsx's compiler nor the parent's
 * own state is in its memory. One worker runtime (one SDK client, as one Lambda has) drains `tasks`
 * bench.noop tasks at concurrency 32, twice on the same runtime, and prints one JSON line.
 */
import { benchTable, drain, enqueueMany } from './bench-runtime.js';
import { sleep } from './measure.js';

export interface MemoryReport {
  tasks: number;
  /** process.resourceUsage().maxRSS: the peak resident set over the whole process, in KB. */
  maxRssKb: number;
  heapAfterFirstBytes: number;
  heapAfterSecondBytes: number;
  drainMs: number[];
}

const CONCURRENCY = 32;

async function main(): Promise<void> {
  const [endpoint, count] = process.argv.slice(2);
  const tasks = Number(count);
  const gc = globalThis.gc;
  if (!endpoint || !Number.isInteger(tasks) || tasks <= 0)
    throw new Error('usage: memory-worker <endpoint> <tasks>');
  if (!gc) throw new Error('run with node --expose-gc');
  const table = await benchTable(endpoint, 'memory');
  const runtime = table.runtime();
  const drainMs: number[] = [];
  const heapAfter: number[] = [];
  for (let round = 0; round < 2; round++) {
    await enqueueMany(runtime.store, tasks, 16);
    drainMs.push((await drain([runtime], tasks, { concurrency: CONCURRENCY })).elapsedMs);
    // Each request's deadline signal (AbortSignal.timeout) holds its request until the timer fires:
    // wait those out so the heap shows what stays, not what is about to go.
    await sleep(table.config.requestDeadlineMs + 500);
    gc();
    await sleep(0);
    gc();
    heapAfter.push(process.memoryUsage().heapUsed);
  }
  runtime.client.destroy();
  const report: MemoryReport = {
    tasks,
    maxRssKb: process.resourceUsage().maxRSS,
    heapAfterFirstBytes: heapAfter[0]!,
    heapAfterSecondBytes: heapAfter[1]!,
    drainMs,
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
