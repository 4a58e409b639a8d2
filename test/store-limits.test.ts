import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

describe('concurrency limits (slot leases, no transactions)', () => {
  it(
    'with a type limit of 3 and 10 racing claimers, never more than 3 run at once',
    { timeout: 60_000 },
    async () => {
      const s = await createTestStore(server.endpoint, { typeConcurrency: 'limited=3' });
      for (let i = 0; i < 30; i++) await s.store.enqueue({ type: 'limited', owner: 'o' });
      let running = 0;
      let peak = 0;
      let done = 0;
      let sampledViolations = 0;
      const sampler = setInterval(() => {
        void s.scanAll().then((items) => {
          const now = s.clock.now();
          const live = items.filter(
            (i) => i.type === 'limited' && i.status === 'RUNNING' && Number(i.leaseUntil) > now,
          ).length;
          if (live > 3) sampledViolations++;
        });
      }, 30);
      await Promise.all(
        Array.from({ length: 10 }, async (_, w) => {
          const store = s.peer({ random: Math.random });
          for (let idle = 0; idle < 40 && done < 30;) {
            const { claimed } = await store.claim({ workerId: `w${w}`, types: ['limited'], max: 2 });
            if (claimed.length === 0) {
              idle++;
              await new Promise((r) => setTimeout(r, 2));
              continue;
            }
            running += claimed.length;
            peak = Math.max(peak, running);
            await new Promise((r) => setTimeout(r, 40));
            for (const c of claimed) {
              running--;
              await store.complete({ lease: c.lease });
              done++;
            }
          }
        }),
      );
      clearInterval(sampler);
      expect(done).toBe(30);
      expect(peak).toBeLessThanOrEqual(3);
      expect(peak).toBeGreaterThanOrEqual(2);
      expect(sampledViolations).toBe(0);
    },
  );

  it('admits exactly the limit: three claimers at once get one task each, a fourth gets none', async () => {
    const s = await createTestStore(server.endpoint, { typeConcurrency: 'exact=3' });
    for (let i = 0; i < 8; i++) await s.store.enqueue({ type: 'exact', owner: 'o' });
    const rounds = await Promise.all(
      [1, 2, 3].map((w) =>
        s.peer({ random: Math.random }).claim({ workerId: `w${w}`, types: ['exact'], max: 1 }),
      ),
    );
    let held = rounds.reduce((sum, r) => sum + r.claimed.length, 0);
    // A claimer that lost a slot race in its round takes a free slot on the next one.
    for (let i = 0; held < 3 && i < 5; i++)
      held += (await s.peer().claim({ workerId: `late${i}`, types: ['exact'], max: 1 })).claimed.length;
    expect(held).toBe(3);
    expect((await s.peer().claim({ workerId: 'w4', types: ['exact'], max: 1 })).claimed).toHaveLength(0);
  });

  it('a global limit caps all types together', async () => {
    const s = await createTestStore(server.endpoint, { globalConcurrency: 2 });
    for (const type of ['x', 'y', 'z']) await s.store.enqueue({ type, owner: 'o' });
    const got = await s.store.claim({ workerId: 'w', types: ['x', 'y', 'z'], max: 3 });
    expect(got.claimed).toHaveLength(2);
    expect((await s.peer().claim({ workerId: 'v', types: ['x', 'y', 'z'], max: 3 })).claimed).toHaveLength(0);
    await s.store.complete({ lease: got.claimed[0]!.lease });
    expect((await s.peer().claim({ workerId: 'v', types: ['x', 'y', 'z'], max: 3 })).claimed).toHaveLength(1);
  });

  it('a dead holder’s slots come back within one lease timeout, and its stranded tasks are recovered', async () => {
    const s = await createTestStore(server.endpoint, { typeConcurrency: 'slots=3' });
    for (let i = 0; i < 6; i++) await s.store.enqueue({ type: 'slots', owner: 'o' });
    const dead = await s.store.claim({ workerId: 'dies', types: ['slots'], max: 6 });
    expect(dead.claimed).toHaveLength(3);
    const survivor = s.peer();
    expect((await survivor.claim({ workerId: 'lives', types: ['slots'], max: 6 })).claimed).toHaveLength(0);

    // Just before the lease (plus skew) runs out, the slots are still held.
    s.clock.advance(s.config.leaseTimeoutMs + s.config.clockSkewMs - 1);
    expect((await survivor.claim({ workerId: 'lives', types: ['slots'], max: 6 })).claimed).toHaveLength(0);
    s.clock.advance(2);
    const taken = await survivor.claim({ workerId: 'lives', types: ['slots'], max: 6 });
    expect(taken.claimed).toHaveLength(3);
    // Taking over a slot first recovered the task the dead holder left on it, so RUNNING never exceeds 3.
    const items = await s.scanAll();
    expect(items.filter((i) => i.type === 'slots' && i.status === 'RUNNING')).toHaveLength(3);
    expect(
      items
        .filter((i) => i.type === 'slots' && i.status === 'RUNNING')
        .every((i) => i.leaseOwner === 'lives'),
    ).toBe(true);
    // The dead holder's late writes are refused.
    await expect(s.store.complete({ lease: dead.claimed[0]!.lease })).rejects.toMatchObject({
      name: 'LeaseLostError',
    });
  });

  it('a slot renewal that fails marks the task lost without extending the task lease', async () => {
    const s = await createTestStore(server.endpoint, { typeConcurrency: 'renewed=1' });
    await s.store.enqueue({ type: 'renewed', owner: 'o' });
    await s.store.enqueue({ type: 'renewed', owner: 'o' });
    const held = (await s.store.claim({ workerId: 'slow', types: ['renewed'], max: 1 })).claimed[0]!;
    s.clock.advance(s.config.leaseTimeoutMs + s.config.clockSkewMs + 1);
    expect((await s.peer().claim({ workerId: 'quick', types: ['renewed'], max: 1 })).claimed).toHaveLength(1);
    const [r] = await s.store.renew({ leases: [held.lease] });
    expect(r!.outcome).toBe('lost');
  });
});
