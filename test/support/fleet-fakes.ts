/** Fakes for the fleet's tests: a seeded random, a promise the test settles, an invoker that records, a run's summary, a timekeeper. */
import { vi, type Mock } from 'vitest';
import type { TimekeeperDuty } from '../../shared/fleet/fleet-invocation.js';
import type { InvocationSource, StartHints, WorkerInvoker } from '../../shared/fleet/worker-invoker.js';
import type { RunSummary } from '../../shared/worker/worker.js';
import { emptyRunSummary } from '../../shared/worker/run-options.js';

/** What a worker run that claimed `claimed` tasks and left nothing waiting returns. */
export function runSummary(claimed = 0): RunSummary {
  return { ...emptyRunSummary(), claimed };
}

/** A reading timekeeper whose `nextDueAt` the test sets (what it would know when the run ends). */
export function fakeTimekeeper(): TimekeeperDuty & {
  nextDueAt: number | undefined;
  dueAfterRelease: Mock<() => Promise<boolean>>;
} {
  return {
    start: vi.fn(),
    stop: vi.fn(async () => undefined),
    dueWithin: vi.fn(() => false),
    expect: vi.fn(),
    expectedWaiting: 0,
    promotedAt: 0,
    nextDueAt: undefined,
    dueAfterRelease: vi.fn(async () => false),
  };
}

/** A reproducible random in [0, 1) (mulberry32). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise callback run (a few macrotask turns). */
export const flush = async (turns = 3) => {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
};

/**
 * A WorkerInvoker that records each start. By default a start answers true at once; with `held`
 * set, each start waits until the test calls `answerAll()` (a slow Invoke in flight).
 */
export class FakeInvoker implements WorkerInvoker {
  readonly calls: InvocationSource[] = [];
  /** The hints each start carried, in order. */
  readonly hints: StartHints[] = [];
  held = false;
  private readonly pending: Deferred<boolean>[] = [];

  start(source: InvocationSource, hints: StartHints = {}): Promise<boolean> {
    this.calls.push(source);
    this.hints.push(hints);
    if (!this.held) return Promise.resolve(true);
    const answer = deferred<boolean>();
    this.pending.push(answer);
    return answer.promise;
  }

  /** Starts still waiting for their answer. */
  get inFlight(): number {
    return this.pending.length;
  }

  answerAll(sent = true): void {
    for (const answer of this.pending.splice(0)) answer.resolve(sent);
  }
}
