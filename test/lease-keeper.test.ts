/** The lease keeper on its own (as BullMQ's lock manager is tested): a fake renew, fake timers. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../shared/clock.js';
import { LeaseEvents } from '../shared/events.js';
import type { Lease, RenewInput } from '../shared/task-inputs.js';
import type { RenewOutcome } from '../shared/store/lease-writes.js';
import { LeaseKeeper } from '../shared/worker/lease-keeper.js';
import { TimerSet } from '../shared/worker/timers.js';
import { silentLogger } from './support/worker-world.js';

const INTERVAL = 10_000;
const LEASE = 60_000;

beforeEach(
  () =>
    void vi.useFakeTimers({
      now: 0,
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
    }),
);
afterEach(() => void vi.useRealTimers());

const lease = (taskId: string, leaseUntil = LEASE): Lease => ({
  taskId,
  type: 't',
  owner: 'w',
  token: 1,
  leaseUntil,
  sweepAt: leaseUntil,
  shard: 0,
  priority: 0,
  createdAt: 0,
  availableAt: 0,
  attempts: 1,
  maxAttempts: 3,
  slots: [],
});

function keeperWith(answer: (l: Lease) => RenewOutcome['outcome'], options: { roundMs?: number } = {}) {
  const rounds: RenewInput[] = [];
  const events = new LeaseEvents();
  const timers = new TimerSet();
  const store = {
    renew: async (input: RenewInput): Promise<RenewOutcome[]> => {
      rounds.push(input);
      if (options.roundMs) await new Promise((r) => setTimeout(r, options.roundMs));
      return input.leases.map((l): RenewOutcome => {
        const outcome = answer(l);
        if (outcome === 'lost') return { taskId: l.taskId, outcome, current: undefined };
        if (outcome === 'error') return { taskId: l.taskId, outcome, error: new Error('throttled') };
        return { taskId: l.taskId, outcome, lease: { ...l, leaseUntil: Date.now() + LEASE } };
      });
    },
  };
  const keeper = new LeaseKeeper({
    store,
    clock: systemClock(),
    timers,
    events,
    logger: silentLogger(),
    heartbeatIntervalMs: INTERVAL,
    monotonic: () => Date.now(),
  });
  const told: string[] = [];
  const holder = (id: string) => ({
    lost: () => told.push(`${id}:lost`),
    cancelRequested: () => told.push(`${id}:cancel`),
  });
  return { keeper, rounds, told, holder, timers };
}

describe('lease keeper', () => {
  it('starts nothing until start(); then renews every tracked lease once per interval, with its progress', async () => {
    const k = keeperWith(() => 'renewed');
    const a = k.keeper.track(lease('a'), k.holder('a'));
    k.keeper.track(lease('b'), k.holder('b'));
    await vi.advanceTimersByTimeAsync(3 * INTERVAL);
    expect(k.rounds).toEqual([]);
    k.keeper.start();
    a.report({ fraction: 0.25, note: 'a quarter' });
    await vi.advanceTimersByTimeAsync(INTERVAL);
    expect(k.rounds).toHaveLength(1);
    expect(k.rounds[0]!.leases.map((l) => l.taskId)).toEqual(['a', 'b']);
    expect(k.rounds[0]!.progress).toEqual({ a: { fraction: 0.25, note: 'a quarter' } });
    expect(a.lease.leaseUntil).toBe(4 * INTERVAL + LEASE);
    await k.keeper.stop();
    expect(k.timers.armed).toBe(0);
  });

  it('tells each holder of a lost lease and of a cancel request, and renews a lost lease no more', async () => {
    const k = keeperWith((l) =>
      l.taskId === 'gone' ? 'lost' : l.taskId === 'cancelled' ? 'cancel-requested' : 'renewed',
    );
    for (const id of ['gone', 'cancelled', 'fine']) k.keeper.track(lease(id), k.holder(id));
    k.keeper.start();
    await vi.advanceTimersByTimeAsync(2 * INTERVAL);
    expect(k.told).toEqual(['gone:lost', 'cancelled:cancel', 'cancelled:cancel']);
    expect(k.rounds[1]!.leases.map((l) => l.taskId)).toEqual(['cancelled', 'fine']);
    await k.keeper.stop();
  });

  it('a failed renewal stops the handler only once its own view of the lease ran out', async () => {
    const k = keeperWith(() => 'error');
    k.keeper.track(lease('a'), k.holder('a'));
    k.keeper.start();
    await vi.advanceTimersByTimeAsync(LEASE - INTERVAL);
    expect(k.told).toEqual([]);
    await vi.advanceTimersByTimeAsync(INTERVAL);
    expect(k.told).toEqual(['a:lost']);
    await k.keeper.stop();
  });

  it('never stacks rounds: a slow round makes the next ticks wait, not pile up', async () => {
    const k = keeperWith(() => 'renewed', { roundMs: 3.5 * INTERVAL });
    k.keeper.track(lease('a'), k.holder('a'));
    k.keeper.start();
    await vi.advanceTimersByTimeAsync(4 * INTERVAL);
    expect(k.rounds).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(INTERVAL);
    expect(k.rounds).toHaveLength(2);
    // stop() waits for the round in flight.
    const stopped = k.keeper.stop();
    await vi.advanceTimersByTimeAsync(4 * INTERVAL);
    await stopped;
    expect(k.rounds).toHaveLength(2);
  });

  it('once the outcome write begins the lease is not renewed, and a round already in flight does not report on it', async () => {
    const k = keeperWith(() => 'lost', { roundMs: INTERVAL / 2 });
    const a = k.keeper.track(lease('a'), k.holder('a'));
    k.keeper.start();
    await vi.advanceTimersByTimeAsync(INTERVAL + 1);
    expect(k.rounds).toHaveLength(1);
    expect(a.stopRenewing().taskId).toBe('a');
    await vi.advanceTimersByTimeAsync(3 * INTERVAL);
    expect(k.told).toEqual([]);
    expect(k.rounds).toHaveLength(1);
    expect(k.keeper.size).toBe(0);
    await k.keeper.stop();
  });

  it('renewNow() waits for a round in flight and then renews just that lease', async () => {
    const k = keeperWith(() => 'renewed', { roundMs: 1_000 });
    const a = k.keeper.track(lease('a'), k.holder('a'));
    k.keeper.track(lease('b'), k.holder('b'));
    k.keeper.start();
    await vi.advanceTimersByTimeAsync(INTERVAL);
    const now = a.renewNow();
    await vi.advanceTimersByTimeAsync(2_000);
    await now;
    expect(k.rounds.map((r) => r.leases.map((l) => l.taskId))).toEqual([['a', 'b'], ['a']]);
    await k.keeper.stop();
  });
  it('a handler calling heartbeat() in a loop does not starve the other leases: the tick it delays is owed a full round', async () => {
    const k = keeperWith(() => 'renewed', { roundMs: 50 });
    const busy = k.keeper.track(lease('busy'), k.holder('busy'));
    k.keeper.track(lease('other'), k.holder('other'));
    k.keeper.start();
    let stop = false;
    const loop = (async () => {
      while (!stop) await busy.renewNow();
    })();
    await vi.advanceTimersByTimeAsync(3 * INTERVAL);
    stop = true;
    await vi.advanceTimersByTimeAsync(100);
    await loop;
    const renewedOther = k.rounds.filter((r) => r.leases.some((l) => l.taskId === 'other')).length;
    // One full round per tick at least, however busy the loop keeps the keeper.
    expect(renewedOther).toBeGreaterThanOrEqual(3);
    expect(k.told).toEqual([]);
    await k.keeper.stop();
  });
});
