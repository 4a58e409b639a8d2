/**
 * The worker with a look gate (the fleet's bell, RunOptions.lookGate) on the emulator: a kick's run
 * takes its tasks by key and returns when they ended without reading a ready partition; a polling run
 * reads the partitions on its first round and afterwards only when the gate says so.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { defineTask } from '../shared/tasks/define.js';
import { INDEX, lanePartition, shardForId } from '../shared/table-layout.js';
import type { Candidate } from '../shared/store/claim-state.js';
import { createWorkerWorld, LOAD_TOLERANT_LEASES, sleep } from './support/worker-world.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const napping = defineTask({
  name: 'nap',
  schema: z.object({ ms: z.number().int().min(0) }),
  handler: async ({ ms }) => {
    await sleep(ms);
    return { slept: ms };
  },
});

async function gateWorld() {
  const w = await createWorkerWorld(server.endpoint, [napping], {
    ...LOAD_TOLERANT_LEASES,
    pollIntervalMs: 50,
    idleStopMs: 60_000,
  });
  const offers: Candidate[] = [];
  w.store.events.on('task:enqueued', (e) => {
    if (e.readySk)
      offers.push({ id: e.taskId, type: e.type, shard: shardForId(e.taskId), readySk: e.readySk });
  });
  return { w, offers };
}

const queries = (sent: Map<string, number>) => sent.get('Query') ?? 0;

describe('a worker with a look gate (emulator)', () => {
  it("a kick's run takes its tasks by key, reads no ready partition, and returns as soon as they ended", async () => {
    const { w, offers } = await gateWorld();
    const ids = [
      (await w.store.enqueue({ type: 'nap', owner: 'o', payload: { ms: 300 } })).task.id,
      (await w.store.enqueue({ type: 'nap', owner: 'o', payload: { ms: 10 } })).task.id,
    ];
    w.meter.reset();
    const shouldRead = vi.fn(async () => false);
    const started = Date.now();
    const summary = await w
      .worker('kicked', { store: w.store })
      .run({ offerReady: offers, returnWhenIdle: true, lookGate: { shouldRead }, idleStopMs: 60_000 });
    expect(summary).toMatchObject({ claimed: 2, stoppedBecause: 'idle' });
    // Not the 60 s idle window: it returned when its tasks had ended.
    expect(Date.now() - started).toBeLessThan(5_000);
    // One Query only: the operators' pauses, read before its first claim (the TYPES partition, no ready one).
    expect(queries(w.meter.sent)).toBe(1);
    // While the 300 ms task ran, its polls asked the gate (the bell), not the partitions.
    expect(shouldRead).toHaveBeenCalled();
    for (const id of ids) expect((await w.store.get({ id })).status).toBe('SUCCESS');
  });

  it('a polling run reads the partitions on its first round, then only when the gate says so', async () => {
    const { w } = await gateWorld();
    let ring = false;
    const shouldRead = vi.fn(async () => {
      const rang = ring;
      ring = false;
      return rang;
    });
    const stop = new AbortController();
    const running = w
      .worker('polling', { store: w.store })
      .run({ lookGate: { shouldRead }, idleStopMs: Number.POSITIVE_INFINITY, stop: stop.signal });
    for (let i = 0; i < 100 && shouldRead.mock.calls.length === 0; i++) await sleep(20);
    expect(queries(w.meter.sent)).toBeGreaterThan(0); // the first round read
    expect(shouldRead).toHaveBeenCalled();
    w.meter.reset();
    // Enqueued by another process: no event reaches this worker; the gate has not rung.
    const id = (await w.peer().enqueue({ type: 'nap', owner: 'o', payload: { ms: 0 } })).task.id;
    await sleep(400);
    expect(queries(w.meter.sent)).toBe(0);
    expect((await w.store.get({ id })).status).toBe('QUEUED');
    ring = true;
    for (let i = 0; i < 50 && (await w.store.get({ id })).status !== 'SUCCESS'; i++) await sleep(50);
    expect((await w.store.get({ id })).status).toBe('SUCCESS');
    expect(queries(w.meter.sent)).toBeGreaterThan(0);
    stop.abort();
    expect(await running).toMatchObject({ claimed: 1, stoppedBecause: 'stop-signal' });
  });

  it('work readied in this process while a round is in flight is read for next, though the gate never rings', async () => {
    const { w } = await gateWorld();
    const shouldRead = vi.fn(async () => false);
    const claim = w.store.claim.bind(w.store);
    let id: string | undefined;
    vi.spyOn(w.store, 'claim').mockImplementationOnce(async (input, memory) => {
      const round = await claim(input, memory);
      // A promotion in this process lands while the round is still in flight.
      id = (await w.peer().enqueue({ type: 'nap', owner: 'o', payload: { ms: 0 } })).task.id;
      w.store.events.emit('task:readied', {});
      return round;
    });
    const stop = new AbortController();
    const running = w
      .worker('polling', { store: w.store })
      .run({ lookGate: { shouldRead }, idleStopMs: Number.POSITIVE_INFINITY, stop: stop.signal });
    for (let i = 0; i < 40 && (id === undefined || (await w.store.get({ id })).status !== 'SUCCESS'); i++)
      await sleep(50);
    stop.abort();
    expect((await running).claimed).toBe(1);
    expect((await w.store.get({ id: id! })).status).toBe('SUCCESS');
  });

  it('a task promoted in this process (the timekeeper) is taken by key by one of its workers, with no read; another priority is read for', async () => {
    const { w } = await gateWorld();
    const shouldRead = vi.fn(async () => false);
    const polling = (ids: string[]) => {
      const stop = new AbortController();
      const runs = ids.map((id) =>
        w
          .worker(id, { store: w.store })
          .run({ lookGate: { shouldRead }, idleStopMs: Number.POSITIVE_INFINITY, stop: stop.signal }),
      );
      return async () => {
        stop.abort();
        return Promise.all(runs);
      };
    };
    const finished = async (id: string) => {
      for (let i = 0; i < 60 && (await w.store.get({ id })).status !== 'SUCCESS'; i++) await sleep(50);
      return (await w.store.get({ id })).status;
    };
    // The ready index's partitions each query read: a type's lane (above the default priority, read
    // before any claim) or one of its shards.
    const read: string[] = [];
    w.client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as {
          IndexName?: string;
          ExpressionAttributeValues?: Record<string, unknown>;
        };
        if (context.commandName === 'QueryCommand' && input.IndexName === INDEX.ready.name)
          read.push(String(input.ExpressionAttributeValues?.[':p']));
        return next(args);
      },
      { step: 'initialize' },
    );
    // Enqueued delayed by another process: nothing reaches these workers until the promotion.
    const delayed = async (priority?: number) =>
      (
        await w.peer().enqueue({
          type: 'nap',
          owner: 'o',
          payload: { ms: 0 },
          delayMs: 300,
          ...(priority ? { priority } : {}),
        })
      ).task.id;
    const id = await delayed();
    const urgent = await delayed(5);
    const stopTwo = polling(['polling-a', 'polling-b']);
    await sleep(500); // both due; the first rounds have read
    read.length = 0;
    expect(await w.store.promote({ id })).toBe(true);
    expect(await finished(id)).toBe('SUCCESS');
    // One write took it: no shard read (the lane only, for the claim order), and no race lost between
    // the two workers of this process.
    expect(read).toEqual([lanePartition('nap')]);
    const two = await stopTwo();
    expect(two.map((r) => r.claimed).sort()).toEqual([0, 1]);
    expect(two.map((r) => r.lostRaces)).toEqual([0, 0]);

    // Another priority is not handed over (claim order): the worker reads the partitions for it.
    const stopOne = polling(['polling-c']);
    await sleep(300);
    read.length = 0;
    expect(await w.store.promote({ id: urgent })).toBe(true);
    expect(await finished(urgent)).toBe('SUCCESS');
    expect(read.filter((p) => p !== lanePartition('nap')).length).toBeGreaterThan(0);
    expect((await stopOne())[0]!.claimed).toBe(1);
  });
});
