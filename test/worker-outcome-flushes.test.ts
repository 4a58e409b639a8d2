/**
 * When a worker flushes its store's outcome counters: every flush interval from the heartbeat, and once
 * more when its run returns (Lambda freezes the process after it), after the last outcome; a flush
 * that throws never breaks the run. In-memory store on fake timers, production settings.
 */
import { describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { systemClock } from '../shared/clock.js';
import { loadConfig } from '../shared/config.js';
import type { OutcomeFlush } from '../shared/stats/outcome-recorder.js';
import { defineTask } from '../shared/tasks/define.js';
import { TaskRegistry } from '../shared/tasks/registry.js';
import { FakeLeaseStore } from './support/fake-lease-store.js';
import { useFakeTime } from './support/fake-time.js';
import { fakeTimeWorker, silentLogger } from './support/worker-world.js';

useFakeTime();

const config = loadConfig({});
const NOTHING: OutcomeFlush = { written: 0, kept: 0, dropped: 0, errors: [] };

/** A fake store that records when it was flushed, and how many tasks had finished by then. */
class FlushedStore extends FakeLeaseStore {
  readonly flushes: { at: number; finished: number }[] = [];
  finished = 0;
  flushFails = false;
  flushOutcomes = async (): Promise<OutcomeFlush> => {
    this.flushes.push({ at: Date.now(), finished: this.finished });
    if (this.flushFails) throw new Error('flush broke');
    return NOTHING;
  };
}

function world(sleepMs: number) {
  const store = new FlushedStore(systemClock(), config);
  // What the worker warned about (its other log levels are silent).
  const logger = silentLogger();
  const warnings: { message: string; extra: unknown }[] = [];
  vi.spyOn(logger, 'warn').mockImplementation((message: unknown, ...extra: unknown[]) => {
    warnings.push({ message: String(message), extra: extra[0] });
  });
  store.events.on('task:finished', () => store.finished++);
  const definitions = [
    defineTask({
      name: 'slow',
      schema: z.unknown(),
      handler: async (_: unknown, ctx) => ctx.sleep(sleepMs),
    }),
  ];
  const worker = fakeTimeWorker(store, new TaskRegistry(definitions, config), config, {
    metricsFlushIntervalMs: 30_000,
    logger,
  });
  const run = async () => {
    let done = false;
    const running = worker.run({ idleStopMs: 1_000 }).finally(() => (done = true));
    for (let i = 0; !done && i < 10_000; i++) await vi.advanceTimersByTimeAsync(1_000);
    return running;
  };
  return { store, run, warnings };
}

describe('outcome counter flushes of a worker', () => {
  it('flush every interval while tasks run, and once more after the last outcome, before run() returns', async () => {
    const { store, run } = world(95_000);
    const started = Date.now();
    store.add({ type: 'slow', payload: null });
    store.add({ type: 'slow', payload: null });
    const summary = await run();
    expect(summary.claimed).toBe(2);
    // Heartbeats every 10 s; a flush on the first one 30 s or more after the last: 30, 60, 90 s.
    const periodic = store.flushes.slice(0, -1).map((f) => Math.round((f.at - started) / 10_000) * 10);
    expect(periodic).toEqual([30, 60, 90]);
    expect(store.flushes.slice(0, -1).every((f) => f.finished === 0)).toBe(true);
    expect(store.flushes.at(-1)).toEqual({ at: expect.any(Number), finished: 2 });
  });

  it('a run too short for the interval still flushes once, at its end', async () => {
    const { store, run } = world(1_000);
    store.add({ type: 'slow', payload: null });
    await run();
    expect(store.flushes).toEqual([{ at: expect.any(Number), finished: 1 }]);
  });

  it('a flush that throws is logged, and the run goes on and returns as usual', async () => {
    const { store, run, warnings } = world(45_000);
    store.flushFails = true;
    const task = store.add({ type: 'slow', payload: null });
    const summary = await run();
    expect(summary).toMatchObject({ claimed: 1, stoppedBecause: 'idle', timersArmed: 0 });
    expect(store.get(task.id).status).toBe('SUCCESS');
    // At 30 s from the heartbeat, and at the end: both threw, and both were logged.
    expect(store.flushes.length).toBe(2);
    const logged = warnings.filter((w) => w.message === 'flushing the outcome counters failed');
    expect(logged).toHaveLength(2);
    expect(logged[0]!.extra).toMatchObject({ error: expect.stringContaining('flush broke') });
  });
});
