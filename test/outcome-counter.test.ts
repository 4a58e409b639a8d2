/**
 * The outcome counter on a fixed clock: what it counts from the lifecycle stream, in which minute, for
 * whom; what a flush drains; and that counts a failed write puts back are neither lost nor doubled.
 */
import { describe, expect, it } from 'vitest';
import { LeaseEvents, type LeaseEventMap } from '../shared/events.js';
import { emptyCounts, minuteOf, OutcomeCounter, total } from '../shared/stats/outcome-counter.js';
import { COUNTERS_PER_WRITE, writePieces } from '../shared/stats/outcome-store.js';
import { ManualClock } from './support/manual-clock.js';

const START = Date.UTC(2026, 10, 30, 9, 0, 0);
const ALICE = 'arn:aws:iam::123456789012:user/alice';
const BOB = 'arn:aws:iam::123456789012:user/bob';
const counts = (c: Partial<ReturnType<typeof emptyCounts>>) => ({ ...emptyCounts(), ...c });

function world() {
  const clock = new ManualClock(START);
  const counter = new OutcomeCounter(clock);
  const events = new LeaseEvents();
  counter.listen(events);
  const finished = (e: Partial<LeaseEventMap['task:finished']>) =>
    events.emit('task:finished', {
      taskId: 't',
      type: 'email.send',
      status: 'SUCCESS',
      by: 'worker',
      owner: ALICE,
      ...e,
    });
  return { clock, counter, events, finished };
}

describe('the outcome counter', () => {
  it('puts each outcome in the minute the clock is in, per owner and type, and a flush drains them oldest first', () => {
    const { clock, counter, finished } = world();
    clock.advance(59_999);
    finished({});
    finished({ status: 'RETRYING' });
    finished({ type: 'report.build', status: 'FAILED', by: 'recovery' });
    finished({ owner: BOB, status: 'CANCELLED', by: 'request' });
    clock.advance(1); // 09:01:00.000, the next minute
    finished({});
    finished({ status: 'RETRYING', by: 'recovery' });

    expect(counter.size).toBe(3);
    const { batches, dropped } = counter.drain(0);
    expect(dropped).toBe(0);
    expect(batches).toEqual([
      {
        owner: ALICE,
        minute: START,
        types: {
          'email.send': counts({ succeeded: 1, retried: 1 }),
          'report.build': counts({ failed: 1 }),
        },
      },
      { owner: BOB, minute: START, types: { 'email.send': counts({ cancelled: 1 }) } },
      { owner: ALICE, minute: START + 60_000, types: { 'email.send': counts({ succeeded: 1, retried: 1 }) } },
    ]);
    // Drained: the next flush has nothing to write.
    expect(counter.size).toBe(0);
    expect(counter.drain(0).batches).toEqual([]);
  });

  it('counts nothing for a lease given back unspent, nor for an event without an owner', () => {
    const { counter, finished } = world();
    finished({ status: 'RELEASED' });
    finished({ owner: undefined });
    expect(counter.size).toBe(0);
  });

  it('keeps owners apart whatever their names, and takes any type name (constructor too)', () => {
    const { counter } = world();
    counter.record('a', 'constructor', 'succeeded');
    counter.record('a', 'toString', 'failed');
    counter.record('a#1', 'x', 'succeeded');
    counter.record('a', 'x', 'succeeded', 2);
    const { batches } = counter.drain(0);
    expect(batches.map((b) => [b.owner, b.types])).toEqual([
      [
        'a',
        {
          constructor: counts({ succeeded: 1 }),
          toString: counts({ failed: 1 }),
          x: counts({ succeeded: 2 }),
        },
      ],
      ['a#1', { x: counts({ succeeded: 1 }) }],
    ]);
  });

  it('a failed write puts its counts back, added to what came meanwhile: the next flush writes both, once', () => {
    const { clock, counter } = world();
    counter.record(ALICE, 'email.send', 'succeeded', 3);
    const failed = counter.drain(0).batches;
    counter.record(ALICE, 'email.send', 'succeeded'); // while the write was failing
    counter.record(ALICE, 'email.send', 'failed');
    for (const batch of failed) counter.restore(batch);
    clock.advance(60_000);
    counter.record(ALICE, 'email.send', 'retried');
    const next = counter.drain(0).batches;
    expect(next).toEqual([
      { owner: ALICE, minute: START, types: { 'email.send': counts({ succeeded: 4, failed: 1 }) } },
      { owner: ALICE, minute: START + 60_000, types: { 'email.send': counts({ retried: 1 }) } },
    ]);
    expect(next.reduce((sum, b) => sum + total(b), 0)).toBe(6);
  });

  it('leaves out minutes older than the retention, and says how many counts that was', () => {
    const { clock, counter } = world();
    counter.record(ALICE, 'email.send', 'succeeded', 2);
    clock.advance(5 * 60_000);
    counter.record(ALICE, 'email.send', 'failed');
    const { batches, dropped } = counter.drain(minuteOf(clock.now()));
    expect(dropped).toBe(2);
    expect(batches).toEqual([
      { owner: ALICE, minute: START + 5 * 60_000, types: { 'email.send': counts({ failed: 1 }) } },
    ]);
  });

  it('cuts a minute of many types into writes of at most COUNTERS_PER_WRITE counters, losing none', () => {
    const { counter } = world();
    for (let i = 0; i < 30; i++) {
      counter.record(ALICE, `type-${i}`, 'succeeded');
      counter.record(ALICE, `type-${i}`, 'failed');
    }
    const [batch] = counter.drain(0).batches;
    const pieces = writePieces(batch!);
    expect(pieces.length).toBe(Math.ceil(60 / COUNTERS_PER_WRITE));
    for (const piece of pieces) {
      const counters = Object.values(piece.types).flatMap((c) => Object.values(c).filter((n) => n !== 0));
      expect(counters.length).toBeLessThanOrEqual(COUNTERS_PER_WRITE);
    }
    expect(pieces.reduce((sum, p) => sum + total(p), 0)).toBe(60);
  });
});
