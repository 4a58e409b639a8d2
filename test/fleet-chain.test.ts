/**
 * The fleet's own bound on its chains of invocations (the worker allows Lambda's recursive loops):
 * every self-start carries its generation; past TUNING.fleet.chainGenerationBound a start is sent only into a
 * seat reserved for it, so a chain refilling a backlog for hours never runs more invocations than the
 * seats, and a hand-over deep in a chain starts its successor into seat 0.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ChainInvoker } from '../shared/fleet/chain-invoker.js';
import { runFleetInvocation } from '../shared/fleet/fleet-invocation.js';
import { chainStartAllowed, explainedInvocationsPerMinute } from '../shared/fleet/fleet-rules.js';
import { FleetScaler } from '../shared/fleet/fleet-scaler.js';
import { FleetSeats } from '../shared/fleet/fleet-seats.js';
import { workerStartEvent } from '../shared/fleet/worker-start-event.js';
import { writeTargetOf } from '../shared/store/context.js';
import { fakeTimekeeper, FakeInvoker, runSummary, seededRandom } from './support/fleet-fakes.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';
import { TUNING } from '../shared/tuning.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const logger = () => ({ warn: vi.fn(), info: vi.fn() });

async function chainWorld(cap = 2) {
  const t = await createTestStore(server.endpoint);
  const seats = new FleetSeats({
    target: writeTargetOf(t.store.ctx),
    clock: t.clock,
    random: seededRandom(11),
    cap,
  });
  const lambda = new FakeInvoker();
  const log = logger();
  const chain = new ChainInvoker({ invoker: lambda, seats, logger: log });
  return { t, seats, lambda, chain, log };
}

describe('chain rules (pure)', () => {
  it('within the bound any start is allowed; past it only one with a reserved seat', () => {
    for (let g = 0; g <= TUNING.fleet.chainGenerationBound; g++)
      expect(chainStartAllowed(g, false)).toBe(true);
    for (const g of [TUNING.fleet.chainGenerationBound + 1, 100, 100_000]) {
      expect(chainStartAllowed(g, false)).toBe(false);
      expect(chainStartAllowed(g, true)).toBe(true);
    }
  });

  it('the invocations a minute the seats explain: a cycle per idle window per seat, a bounce per seat, the tick', () => {
    expect(explainedInvocationsPerMinute(10, 2_000)).toBe(10 * 30 + 10 + 1);
    expect(explainedInvocationsPerMinute(1, 2_000)).toBe(32);
    // An idle window that does not divide the minute rounds up (never an alarm below what can happen).
    expect(explainedInvocationsPerMinute(4, 7_000)).toBe(4 * 9 + 4 + 1);
  });

  it('the start event carries the generation; a malformed one is dropped, as 0', () => {
    expect(workerStartEvent({ source: 'leasehold.scale', generation: 17 }).hints).toEqual({ generation: 17 });
    for (const bad of [-1, 1.5, '3', null, 2e9])
      expect(workerStartEvent({ source: 'leasehold.scale', generation: bad }).hints).toEqual({});
  });
});

describe('ChainInvoker (seats on the emulator, recording invoker)', () => {
  it('within the bound: stamps the next generation and reserves nothing', async () => {
    const w = await chainWorld();
    w.chain.enter(3);
    expect(await w.chain.start('leasehold.due', { keepTime: true })).toBe(true);
    expect(w.lambda.hints).toEqual([{ keepTime: true, generation: 4 }]);
    expect(await w.seats.running()).toBe(0);
    // A fresh invocation without a generation (the tick, a kick) starts chains at 1.
    w.chain.enter(0);
    await w.chain.start('leasehold.scale');
    expect(w.lambda.hints[1]).toEqual({ generation: 1 });
  });

  it('past the bound a hand-over reserves seat 0 for its successor, which adopts it and keeps time', async () => {
    const w = await chainWorld();
    w.chain.enter(TUNING.fleet.chainGenerationBound);
    expect(await w.chain.start('leasehold.due', { keepTime: true })).toBe(true);
    const sent = w.lambda.hints[0]!;
    expect(sent).toMatchObject({ keepTime: true, generation: TUNING.fleet.chainGenerationBound + 1 });
    expect(sent.seat).toMatchObject({ index: 0 });
    expect(await w.seats.running()).toBe(1);
    // Nobody else can take seat 0 meanwhile; the successor adopts it.
    expect(await w.seats.takeTimekeeper('someone-else', w.t.clock.now() + 60_000)).toBeUndefined();
    const start = workerStartEvent(JSON.parse(JSON.stringify({ source: 'leasehold.due', ...sent })));
    const result = await runFleetInvocation(
      {
        worker: { run: async () => runSummary() },
        seats: w.seats,
        scaler: { settled: async () => undefined, refill: async () => false },
        invoker: w.chain,
        timekeeper: fakeTimekeeper,
        clock: w.t.clock,
        logger: logger(),
        clockSkewMs: 5_000,
        pause: async () => undefined,
      },
      'successor',
      () => 60_000,
      start.hints,
    );
    expect(result).toMatchObject({ seat: 0, timekeeper: true });
  });

  it('past the bound with every seat held: sends nothing and counts the refusal; a start already holding a seat goes', async () => {
    const w = await chainWorld(2);
    await w.seats.take('a', w.t.clock.now() + 60_000);
    const b = await w.seats.take('b', w.t.clock.now() + 60_000);
    w.chain.enter(TUNING.fleet.chainGenerationBound + 40);
    expect(await w.chain.start('leasehold.due', { keepTime: true })).toBe(false);
    expect(await w.chain.start('leasehold.scale')).toBe(false);
    expect(w.lambda.calls).toEqual([]);
    expect(w.chain.counts).toEqual({ sent: 0, refused: 2 });
    const seat = { index: b!.index, holder: b!.holder, token: b!.token };
    expect(await w.chain.start('leasehold.scale', { seat })).toBe(true);
    expect(w.lambda.hints).toEqual([{ seat, generation: TUNING.fleet.chainGenerationBound + 41 }]);
  });

  it('past the bound, an Invoke that fails gives the seat it reserved back at once', async () => {
    const w = await chainWorld(2);
    const failing = new ChainInvoker({
      invoker: { start: async () => false },
      seats: w.seats,
      logger: w.log,
    });
    failing.enter(TUNING.fleet.chainGenerationBound + 1);
    expect(await failing.start('leasehold.scale')).toBe(false);
    expect(await w.seats.running()).toBe(0);
  });

  it(
    'a backlog held at the cap for 120 hops (two hours of invocations a minute long): every refill is sent, deep ones into reserved seats, never more than the cap held',
    { timeout: 120_000 },
    async () => {
      const cap = 3;
      const w = await chainWorld(cap);
      const scaler = new FleetScaler({ seats: w.seats, invoker: w.chain, clock: w.t.clock, logger: w.log });
      // The fleet at the cap: three invocations, one per seat, each the head of its own chain.
      const running = [];
      for (let i = 0; i < cap; i++)
        running.push({ lease: (await w.seats.take(`inv-${i}`, w.t.clock.now() + 600_000))!, generation: 0 });
      for (let hop = 0; hop < 120; hop++) {
        // The oldest invocation returns (its claim window is over) and gives its seat back; a saturated
        // one refills it with a scale-up, one hop deeper in its chain.
        const ending = running.shift()!;
        expect(await w.seats.release(ending.lease)).toBe(true);
        const parent = running[hop % running.length]!;
        w.chain.enter(parent.generation);
        w.t.clock.advance(1_000);
        scaler.saturated();
        await scaler.settled();
        const sent = w.lambda.hints.at(-1)!;
        expect(w.lambda.hints).toHaveLength(hop + 1);
        expect(sent.generation).toBe(parent.generation + 1);
        expect(sent.seat).toBeDefined();
        const start = workerStartEvent({ source: 'leasehold.scale', ...sent }).hints;
        const lease = await w.seats.adopt(start.seat!, `inv-${cap + hop}`, w.t.clock.now() + 600_000);
        expect(lease).toBeDefined();
        running.push({ lease: lease!, generation: start.generation ?? 0 });
        expect(await w.seats.running()).toBe(cap);
      }
      // The chains went far past Lambda's ~16 hops, and none was refused or dropped.
      expect(Math.max(...running.map((r) => r.generation))).toBeGreaterThan(
        3 * TUNING.fleet.chainGenerationBound,
      );
      expect(w.chain.counts).toEqual({ sent: 120, refused: 0 });
    },
  );
});
