import { describe, expect, it } from 'vitest';
import { expectingWork, idlePollWait, pollWait } from '../shared/worker/poll-rules.js';
import { TUNING } from '../shared/tuning.js';

const AT = 1_000_000;

describe('poll rules', () => {
  it('without an expected burst: the poll interval, and nothing keeps the run up', () => {
    expect(pollWait(1_000, undefined, AT)).toBe(1_000);
    expect(expectingWork(undefined, AT)).toBe(false);
  });

  it('before the burst: wait until just past its instant (never longer than a poll)', () => {
    expect(pollWait(1_000, AT, AT - 300)).toBe(305);
    expect(pollWait(1_000, AT, AT - 5_000)).toBe(1_000);
    expect(expectingWork(AT, AT - 5_000)).toBe(true);
  });

  it('within the window after it: look often; after the window: back to the poll, and free to stop', () => {
    expect(pollWait(1_000, AT, AT)).toBe(TUNING.poll.expectedWorkPollMs);
    expect(pollWait(20, AT, AT + 10)).toBe(20);
    expect(expectingWork(AT, AT + TUNING.poll.expectedWorkWindowMs - 1)).toBe(true);
    expect(expectingWork(AT, AT + TUNING.poll.expectedWorkWindowMs)).toBe(false);
    expect(pollWait(1_000, AT, AT + TUNING.poll.expectedWorkWindowMs)).toBe(1_000);
  });

  it('idle polls back off: doubling after the first empty round, up to 8 intervals and a second, never below the interval', () => {
    const waits = (poll: number, ceiling?: number) =>
      [0, 1, 2, 3, 4, 5, 6, 12].map((empty) => idlePollWait(poll, poll, empty, ceiling));
    expect(waits(50)).toEqual([50, 50, 100, 200, 400, 400, 400, 400]);
    expect(waits(20)).toEqual([20, 20, 40, 80, 160, 160, 160, 160]);
    expect(waits(200)).toEqual([200, 200, 400, 800, 1_000, 1_000, 1_000, 1_000]);
    // The default interval and longer ones are never stretched.
    expect(waits(1_000)).toEqual(Array(8).fill(1_000));
    expect(waits(5_000)).toEqual(Array(8).fill(5_000));
    // Where every writer wakes the worker (the local stack): up to a second whatever the interval.
    expect(waits(50, 1_000)).toEqual([50, 50, 100, 200, 400, 800, 1_000, 1_000]);
    // A shorter wait (a burst's window, a retry due) is kept as it is.
    expect(idlePollWait(30, 1_000, 9)).toBe(30);
  });
});
