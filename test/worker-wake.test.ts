/**
 * The worker's in-process wake and its saturation signal, on the in-memory store and fake timers
 * with the production poll interval (1 s): a task readied in this process is claimed within
 * milliseconds, not at the next poll; a round that fills every free slot tells `onSaturated`.
 */
import { describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { systemClock } from '../shared/clock.js';
import { loadConfig, type LeaseholdConfig } from '../shared/config.js';
import type { ClaimState } from '../shared/store/claim-state.js';
import type { ClaimInput } from '../shared/task-inputs.js';
import { defineTask } from '../shared/tasks/define.js';
import { TaskRegistry } from '../shared/tasks/registry.js';
import type { RunSummary } from '../shared/worker/worker.js';
import { FakeLeaseStore } from './support/fake-lease-store.js';
import { deferred, type Deferred } from './support/fleet-fakes.js';
import { fakeTimeWorker } from './support/worker-world.js';
import { advance, START, useFakeTime } from './support/fake-time.js';

useFakeTime();

/** Production defaults: poll 1 s, 8 slots. */
const config: LeaseholdConfig = loadConfig({});

function wakeWorld() {
  const store = new FakeLeaseStore(systemClock(), config);
  /** Each task runs until the test lets it finish. */
  const gates = new Map<string, Deferred<void>>();
  const registry = new TaskRegistry(
    [
      defineTask({
        name: 'job',
        schema: z.object({ n: z.number() }),
        handler: async (_input, ctx) => {
          const gate = deferred();
          gates.set(ctx.taskId, gate);
          await gate.promise;
          return 'done';
        },
      }),
    ],
    config,
  );
  const onSaturated = vi.fn();
  const worker = fakeTimeWorker(store, registry, config, { onSaturated });
  const claimedAt: { taskId: string; at: number }[] = [];
  store.events.on('claim:won', ({ taskId }) => claimedAt.push({ taskId, at: Date.now() }));
  const rounds: number[] = [];
  store.events.on('claim:round', () => rounds.push(Date.now()));
  const stop = new AbortController();
  let summary: RunSummary | undefined;
  const running = worker.run({ stop: stop.signal, idleStopMs: Number.POSITIVE_INFINITY }).then((s) => {
    summary = s;
    return s;
  });
  return {
    store,
    worker,
    onSaturated,
    claimedAt,
    rounds,
    add: (n: number) => store.add({ type: 'job', payload: { n } }).id,
    /** Lets every running task finish, stops the worker and waits for it to return. */
    finish: async () => {
      for (const gate of gates.values()) gate.resolve();
      stop.abort();
      for (let i = 0; summary === undefined && i < 120; i++) await advance(1_000);
      return running;
    },
  };
}

describe('worker wake and saturation (fake store, fake timers)', () => {
  it('a worker waiting for its next poll claims a task readied in this process within milliseconds', async () => {
    const w = wakeWorld();
    await advance(100); // first round found nothing: the worker waits for its next poll (at 1 s)
    expect(w.rounds).toHaveLength(1);
    const id = w.add(1); // the fake store emits 'task:readied' on the process stream
    await advance(5);
    expect(w.claimedAt).toEqual([{ taskId: id, at: START + 100 }]);
    expect(w.store.get(id).status).toBe('RUNNING');
    // Rounds: the first at start, the woken one (and the empty one it goes on with) at 100 ms; the
    // next poll a full interval after that, not at the 1 s the interrupted pause was aiming for.
    await advance(config.pollIntervalMs);
    expect(w.rounds.map((at) => at - START)).toEqual([0, 100, 100, 100 + config.pollIntervalMs]);
    expect((await w.finish()).claimed).toBe(1);
  });

  it('a task readied by another writer without the event waits for the next poll (the event is the wake)', async () => {
    const w = wakeWorld();
    await advance(100);
    // The same task, but its 'task:readied' does not reach the worker's stream (another process wrote it).
    const emit = w.store.events.emit.bind(w.store.events);
    const muted = vi.spyOn(w.store.events, 'emit').mockImplementation((name, event) => {
      if (name !== 'task:readied') emit(name, event as never);
    });
    const id = w.add(1);
    muted.mockRestore();
    await advance(config.pollIntervalMs - 101);
    expect(w.claimedAt).toEqual([]);
    await advance(1);
    expect(w.claimedAt).toEqual([{ taskId: id, at: START + config.pollIntervalMs }]);
    await w.finish();
  });

  it('a task readied while a claim round is in flight makes the next pause return at once', async () => {
    const w = wakeWorld();
    await advance(100); // the worker waits for its next poll
    // The next round reads the store (nothing due yet) and then answers slowly.
    const slow = deferred();
    const claim = w.store.claim.bind(w.store);
    let inFlight = false;
    vi.spyOn(w.store, 'claim').mockImplementationOnce(async (input: ClaimInput, memory: ClaimState) => {
      const round = await claim(input, memory);
      inFlight = true;
      await slow.promise;
      return round;
    });
    await advance(config.pollIntervalMs - 100);
    expect(inFlight).toBe(true);
    const id = w.add(1); // readied while the round is in flight: no pause to wake
    await advance(50);
    expect(w.claimedAt).toEqual([]);
    slow.resolve(); // the round ends with nothing; the worker must not sleep a full poll now
    await advance(5);
    expect(w.claimedAt).toEqual([{ taskId: id, at: START + config.pollIntervalMs + 50 }]);
    await w.finish();
  });

  it('onSaturated: called when a round fills every free slot, not when it fills fewer', async () => {
    const w = wakeWorld();
    await advance(100);
    // Three tasks for eight free slots: not saturated.
    for (let i = 0; i < 3; i++) w.add(i);
    await advance(5);
    expect(w.claimedAt).toHaveLength(3);
    expect(w.worker.running).toBe(3);
    expect(w.onSaturated).not.toHaveBeenCalled();
    // Five more fill the five free slots: saturated (free slots, not the worker's concurrency).
    for (let i = 3; i < 8; i++) w.add(i);
    await advance(5);
    expect(w.claimedAt).toHaveLength(8);
    expect(w.onSaturated).toHaveBeenCalledTimes(1);
    // No free slot: no round, no further call, however long the backlog waits.
    for (let i = 8; i < 20; i++) w.add(i);
    await advance(3 * config.pollIntervalMs);
    expect(w.claimedAt).toHaveLength(8);
    expect(w.onSaturated).toHaveBeenCalledTimes(1);
    expect((await w.finish()).claimed).toBeGreaterThanOrEqual(8);
  });

  it('onSaturated: tasks readied during the first round fill all eight slots in the next, which calls it once', async () => {
    const w = wakeWorld();
    // The first round is in flight (the fake store answers on a later tick): no pause to wake yet.
    for (let i = 0; i < 8; i++) w.add(i);
    await advance(5);
    expect(w.claimedAt).toHaveLength(8);
    expect(w.onSaturated).toHaveBeenCalledTimes(1);
    await w.finish();
  });
});
