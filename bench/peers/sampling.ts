/**
 * The method, the same for every system: warm up, then single tasks enqueued one at a time to an idle
 * consumer, then one burst. Producer and consumer share this process, so both ends of each latency
 * are read from the one monotonic clock (`performance.now()`).
 */
import { performance } from 'node:perf_hooks';
import { percentile, round, sleep } from '../measure.js';
import type { BurstFigures, Method, OpenSystem, SingleFigures } from './types.js';

/** A start that does not come within this long fails the system's row instead of hanging the run. */
const START_TIMEOUT_MS = 30_000;
const BURST_TIMEOUT_MS = 180_000;
/** After a start, before the next gap: the no-op handler's completion write lands, so the consumer is idle again. */
const SETTLE_MS = 20;

export interface Sampled {
  single: SingleFigures;
  burst: BurstFigures;
}

/** Start times by task number, and waiters for the ones not yet started. */
class Starts {
  private readonly at = new Map<number, number>();
  private readonly waiting = new Map<number, () => void>();

  readonly record = (n: number): void => {
    // Read the clock before anything else: this is the handler's first instruction.
    const now = performance.now();
    if (!this.at.has(n)) this.at.set(n, now);
    this.waiting.get(n)?.();
  };

  async of(n: number, timeoutMs: number): Promise<number> {
    if (!this.at.has(n)) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.waiting.set(n, resolve)),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`task ${n} did not start within ${timeoutMs} ms`)),
            timeoutMs,
          );
        }),
      ]).finally(() => {
        clearTimeout(timer);
        this.waiting.delete(n);
      });
    }
    return this.at.get(n)!;
  }
}

export async function sample(open: OpenSystem, method: Method): Promise<Sampled> {
  const starts = new Starts();
  const system = await open(starts.record);
  let next = 0;
  /** One task to the idle consumer after a random gap; its enqueue-to-start latency in ms. */
  const single = async (gap: { min: number; max: number }): Promise<number> => {
    await sleep(gap.min + Math.random() * (gap.max - gap.min));
    const n = next++;
    const issued = performance.now();
    const enqueued = system.enqueue(n);
    const started = await Promise.race([starts.of(n, START_TIMEOUT_MS), failureOf(enqueued)]);
    await enqueued;
    await sleep(SETTLE_MS);
    return started - issued;
  };
  try {
    // Warm-up: JIT, connections, prepared statements, and a few idle polls behind the consumer.
    for (let i = 0; i < method.warmup; i++) await single(method.gapMs);
    const latencies: number[] = [];
    for (let i = 0; i < method.samples; i++) latencies.push(await single(method.gapMs));
    await sleep(method.gapMs.max); // idle again before the burst
    const burst = await burstOf(method.burstTasks, () => next++, system.enqueue.bind(system), starts);
    return { single: figures(latencies), burst };
  } finally {
    await system.stop();
  }
}

/** `tasks` enqueue calls issued at once; the clock runs until the last handler started. */
async function burstOf(
  tasks: number,
  number: () => number,
  enqueue: (n: number) => Promise<unknown>,
  starts: Starts,
): Promise<BurstFigures> {
  const ns = Array.from({ length: tasks }, number);
  const issued = performance.now();
  const enqueued = Promise.all(ns.map((n) => enqueue(n)));
  const started = await Promise.race([
    Promise.all(ns.map((n) => starts.of(n, BURST_TIMEOUT_MS))),
    failureOf(enqueued),
  ]);
  await enqueued;
  const lastStartMs = Math.max(...started) - issued;
  return { tasks, lastStartMs: round(lastStartMs, 1), tasksPerS: round(tasks / (lastStartMs / 1000), 0) };
}

/** Rejects when the enqueue does and never settles otherwise, so a failed enqueue ends the wait for its start at once. */
const failureOf = (enqueued: Promise<unknown>) => enqueued.then(() => new Promise<never>(() => undefined));

function figures(latencies: number[]): SingleFigures {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (p: number) => round(percentile(sorted, p), 1);
  return { samples: sorted.length, p50: at(50), p90: at(90), p99: at(99), max: round(sorted.at(-1)!, 1) };
}
