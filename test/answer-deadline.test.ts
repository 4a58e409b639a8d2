/** settleWithin (shared/api/answer-deadline.ts) with hand-driven timers: the work's answer, or the late one at the deadline. */
import { describe, expect, it } from 'vitest';
import { deadlineAnswer, settleWithin, type DeadlineTimers } from '../shared/api/answer-deadline.js';

/** Timers fired by hand: `fire()` runs every pending one. */
function handTimers() {
  const pending = new Map<number, { fn: () => void; ms: number }>();
  let next = 0;
  const timers: DeadlineTimers = {
    setTimeout: (fn, ms) => {
      pending.set(++next, { fn, ms });
      return next;
    },
    clearTimeout: (handle) => void pending.delete(handle as number),
  };
  return {
    timers,
    pending,
    fire: () => {
      for (const [id, t] of [...pending]) {
        pending.delete(id);
        t.fn();
      }
    },
  };
}

describe('answering within the function’s time', () => {
  it('answers the work when it settles first, and clears its timer', async () => {
    const { timers, pending } = handTimers();
    await expect(settleWithin(Promise.resolve('done'), 5_000, () => 'late', timers)).resolves.toBe('done');
    expect(pending.size).toBe(0);
  });

  it('answers late() at the deadline when the work has not settled; a deadline already past is 0 ms', async () => {
    const { timers, pending, fire } = handTimers();
    const answer = settleWithin(new Promise<string>(() => undefined), -20, () => 'late', timers);
    expect([...pending.values()].map((t) => t.ms)).toEqual([0]);
    fire();
    await expect(answer).resolves.toBe('late');
  });

  it('waits for the work without a deadline, and passes its failure on', async () => {
    const { timers, pending } = handTimers();
    await expect(
      settleWithin(Promise.reject(new Error('refused')), undefined, () => 'late', timers),
    ).rejects.toThrow('refused');
    expect(pending.size).toBe(0);
  });

  it('the late answer is a 504 the client sends again', () => {
    const answer = deadlineAnswer();
    expect(answer.statusCode).toBe(504);
    expect(answer.headers).toMatchObject({ 'retry-after': '1', 'content-type': 'application/problem+json' });
    expect(JSON.parse(answer.body)).toMatchObject({ status: 504, code: 'DEADLINE' });
  });
});
