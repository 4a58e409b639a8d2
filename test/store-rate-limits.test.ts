/**
 * Rate limits without transactions (shared/rate-rules.ts, shared/store/rate-tokens.ts): the pure token
 * rules on a fixed clock; a store on a manual clock that starts at most `limit` tasks of a type in any
 * window of `intervalMs` (checked from each start's `startedAt`), spends no attempt on the tasks that
 * wait, and starts them once the window has moved on; racing claimers on their own clients that together
 * never pass the limit; and a take given back after a lost race.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { ConfigError } from '../shared/errors.js';
import { TaskRegistry } from '../shared/tasks/registry.js';
import { freeTokens, nextTokenFreeAt, type RateLimit } from '../shared/rate-rules.js';
import { ClaimState } from '../shared/store/claim-state.js';
import { RateTokens } from '../shared/store/rate-tokens.js';
import { TaskStatus } from '../shared/task-model.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';
import { mostStartsInWindow } from './support/rate-window.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const RATE: RateLimit = { limit: 3, intervalMs: 1_000 };

describe('the token rules (pure)', () => {
  it('a token gives a start once per interval; the next frees at the soonest use plus the interval', () => {
    const one: RateLimit = { limit: 1, intervalMs: 1_000 };
    expect(freeTokens(new Map(), one, 5_000)).toEqual([0]);
    expect(freeTokens(new Map([[0, 4_000]]), one, 5_000)).toEqual([0]);
    expect(freeTokens(new Map([[0, 4_001]]), one, 5_000)).toEqual([]);
    const used = new Map([
      [0, 4_500],
      [1, 4_200],
      [2, 4_900],
    ]);
    expect(freeTokens(used, RATE, 5_000)).toEqual([]);
    expect(nextTokenFreeAt(used, RATE, 5_000)).toBe(5_200);
    expect(freeTokens(used, RATE, 5_200)).toEqual([1]);
    expect(freeTokens(new Map([[0, 4_500]]), RATE, 5_000)).toEqual([1, 2]);
    expect(nextTokenFreeAt(new Map([[0, 4_500]]), RATE, 5_000)).toBe(5_000);
  });

  it('a placed claimer takes its own tokens as they free, and the others a grace later', () => {
    const share = { owns: (i: number) => i === 1, graceMs: 40 };
    const used = new Map([
      [0, 4_000],
      [1, 4_010],
      [2, 3_000],
    ]);
    // Token 2 freed long ago for anyone; token 0 frees for it at 5,040, its own token 1 at 5,010.
    expect(freeTokens(used, RATE, 5_000, share)).toEqual([2]);
    expect(freeTokens(used, RATE, 5_010, share)).toEqual([1, 2]);
    expect(freeTokens(used, RATE, 5_040, share)).toEqual([1, 0, 2]);
    const busy = new Map([
      [0, 4_500],
      [1, 4_600],
      [2, 4_550],
    ]);
    expect(nextTokenFreeAt(busy, RATE, 5_000, share)).toBe(5_540);
    expect(nextTokenFreeAt(busy, RATE, 5_000)).toBe(5_500);
  });

  it('the window check counts what a window of the interval holds', () => {
    expect(mostStartsInWindow([0, 999, 1_000, 1_998], 1_000)).toBe(3);
    expect(mostStartsInWindow([0, 999, 1_999, 2_000], 1_000)).toBe(2);
    expect(mostStartsInWindow([0, 1, 2, 999], 1_000)).toBe(4);
  });
});

describe('rate-limited claims (dynalite or DynamoDB Local)', () => {
  it('starts at most the limit a window, spends no attempt on the rest, and starts them as the window moves', async () => {
    const s = await createTestStore(server.endpoint, {}, { rateLimits: { limited: RATE } });
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await s.store.enqueue({ type: 'limited', owner: 'o' })).task.id);
    await s.store.enqueue({ type: 'free', owner: 'o' });
    const memory = new ClaimState();
    const claim = async () =>
      (await s.store.claim({ workerId: 'w1', types: ['limited', 'free'], max: 10 }, memory)).claimed;

    const first = await claim();
    expect(first.filter((c) => c.task.type === 'limited')).toHaveLength(3);
    expect(first.filter((c) => c.task.type === 'free')).toHaveLength(1);
    // Told when to look again: when the soonest token frees, a second after it was used, plus a spread
    // of up to two tokens' worth of the interval (claimers that ran out together do not all come back at once).
    expect(memory.othersDueAt).toBeGreaterThanOrEqual(s.clock.now() + 1_000);
    expect(memory.othersDueAt).toBeLessThan(s.clock.now() + 1_000 + (2 * 1_000) / 3);
    s.clock.advance(999);
    expect(await claim()).toEqual([]);
    const waiting = await Promise.all(ids.map((id) => s.store.get({ id })));
    expect(waiting.filter((t) => t.status === TaskStatus.QUEUED).every((t) => t.attempts === 0)).toBe(true);
    s.clock.advance(1);
    expect(await claim()).toHaveLength(3);
    s.clock.advance(1_000);
    expect(await claim()).toHaveLength(2);

    const started = (await Promise.all(ids.map((id) => s.store.get({ id })))).map((t) => t.startedAt!);
    expect(started.every((t) => t !== undefined)).toBe(true);
    expect(mostStartsInWindow(started, RATE.intervalMs)).toBe(RATE.limit);
    // Each start cost one token write: 8 starts, 8 token items written at most 3 distinct.
    const tokens = (await s.scanAll()).filter((i) => String(i.pk).startsWith('RATE#'));
    expect(tokens.map((t) => t.sk).sort()).toEqual(['TOKEN#0000', 'TOKEN#0001', 'TOKEN#0002']);
  });

  it('racing claimers on their own clients never pass the limit together', { timeout: 30_000 }, async () => {
    const s = await createTestStore(
      server.endpoint,
      {},
      { rateLimits: { limited: { limit: 4, intervalMs: 1_000 } } },
    );
    for (let i = 0; i < 40; i++) await s.store.enqueue({ type: 'limited', owner: 'o' });
    const workers = Array.from({ length: 8 }, () => ({
      store: s.peer({ random: Math.random }),
      memory: new ClaimState(),
    }));
    const starts: number[] = [];
    for (let window = 0; window < 5; window++) {
      // Rounds of all eight at once until one wins nothing: a claimer that loses a token gives up its round.
      let won = 0;
      for (let round = 0; round < 10; round++) {
        const rounds = await Promise.all(
          workers.map(({ store, memory }, w) =>
            store.claim({ workerId: `w${w}`, types: ['limited'], max: 3 }, memory),
          ),
        );
        const claimed = rounds.flatMap((r) => r.claimed);
        if (claimed.length === 0) break;
        won += claimed.length;
        starts.push(...claimed.map((c) => c.task.startedAt!));
      }
      expect(won).toBe(4);
      s.clock.advance(1_000);
    }
    expect(mostStartsInWindow(starts, 1_000)).toBe(4);
  });

  it('a take replaces only the use it read, so its give-back never erases another claimer’s newer start', async () => {
    const s = await createTestStore(
      server.endpoint,
      {},
      { rateLimits: { limited: { limit: 1, intervalMs: 1_000 } } },
    );
    // A reads the token (never used); B, whose clock is behind, starts at 10,000; then A, at 11,000.
    const a = new RateTokens(s.store.ctx);
    expect(await a.mayStart('limited', 9_000)).toBe(true);
    expect(await new RateTokens(s.store.ctx).take('limited', 'task-b', 10_000)).toMatchObject({
      usedAt: 10_000,
    });
    const taken = await a.take('limited', 'task-a', 11_000);
    // Had A overwritten B's use, its give-back (its claim lost) would restore "never used"...
    if (taken && taken !== 'none') await a.giveBack(taken);
    expect(taken).toBe('none');
    // ...and C could start at 10,500, two starts 500 ms apart under a limit of 1 a second.
    expect(await new RateTokens(s.store.ctx).take('limited', 'task-c', 10_500)).toBe('none');
  });

  it('gives a take back (its claim lost): the token is free again; a take made since stands', async () => {
    const s = await createTestStore(
      server.endpoint,
      {},
      { rateLimits: { limited: { limit: 1, intervalMs: 60_000 } } },
    );
    const now = s.clock.now();
    const first = new RateTokens(s.store.ctx);
    const take = await first.take('limited', 'task-a', now);
    expect(take).toMatchObject({ index: 0, usedAt: now, before: {} });
    expect(await new RateTokens(s.store.ctx).take('limited', 'task-b', now + 10)).toBe('none');
    await first.giveBack(take as Exclude<typeof take, 'none' | undefined>);
    const again = await new RateTokens(s.store.ctx).take('limited', 'task-b', now + 20);
    expect(again).toMatchObject({ index: 0, usedAt: now + 20 });
    // task-a's give-back, sent again, does not undo task-b's start.
    await first.giveBack(take as Exclude<typeof take, 'none' | undefined>);
    expect(await new RateTokens(s.store.ctx).take('limited', 'task-c', now + 30)).toBe('none');
    expect(await new RateTokens(s.store.ctx).take('unlimited', 'task-d', now)).toBeUndefined();
  });
});

describe('a rate limit a definition declares', () => {
  it('is checked once at start-up: every bad part named, nothing runs', () => {
    const handler = () => undefined;
    const schema = z.unknown();
    let error: unknown;
    try {
      new TaskRegistry(
        [
          { name: 'a.zero', schema, handler, rateLimit: { limit: 0, intervalMs: 1_000 } },
          { name: 'a.long', schema, handler, rateLimit: { limit: 5, intervalMs: 2 * 86_400_000 } },
          { name: 'a.many', schema, handler, rateLimit: { limit: 1_001, intervalMs: 1_000 } },
          { name: 'a.ok', schema, handler, rateLimit: { limit: 5, intervalMs: 1_000 } },
        ],
        { maxExecutionMs: 60_000 },
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const paths = (error as ConfigError).problems.map((p) => `${p.path}: ${p.message}`);
    expect(paths).toEqual([
      expect.stringMatching(/^task a\.zero\.rateLimit\.limit: /),
      'task a.long.rateLimit.intervalMs: must be at most 86400000 ms (a day)',
      'task a.many.rateLimit.limit: must be at most 1000 starts',
    ]);
    const ok = new TaskRegistry(
      [{ name: 'a.ok', schema, handler, rateLimit: { limit: 5, intervalMs: 1_000 } }],
      {
        maxExecutionMs: 60_000,
      },
    );
    expect(ok.rateLimits()).toEqual({ 'a.ok': { limit: 5, intervalMs: 1_000 } });
  });
});
