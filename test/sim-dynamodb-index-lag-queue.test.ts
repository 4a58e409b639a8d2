/**
 * The index lag's queue of copies under a burst of writes, against a fake emulator and fake timers:
 * finding the copies due does not walk every item waiting, and each item's copies still land in write
 * order, one at a time, all of them, with a failed copy tried again.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Backend } from '../tools/sim/dynamodb/backend.js';
import { IndexLag } from '../tools/sim/dynamodb/index-lag.js';

const ITEMS = 3_000;
const WRITES = 3;

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

describe('sim DynamoDB: the index lag under a burst of writes', () => {
  it('applies every item’s copies in order, one at a time, retrying failures, without walking all waiting items', async () => {
    const applied = new Map<string, number[]>();
    const inFlight = new Set<string>();
    let overlaps = 0;
    let calls = 0;
    const backend = {
      call: async (_operation: string, input: { Item: { pk: { S: string }; n: { N: string } } }) => {
        const pk = input.Item.pk.S;
        if (inFlight.has(pk)) overlaps++;
        inFlight.add(pk);
        await new Promise((r) => setTimeout(r, 5));
        inFlight.delete(pk);
        if (++calls % 7 === 0) throw new Error('emulator busy');
        applied.set(pk, [...(applied.get(pk) ?? []), Number(input.Item.n.N)]);
        return {};
      },
    } as unknown as Backend;
    // A fixed spread of lags over 0-500 ms.
    let seed = 1;
    const random = () => (seed = (seed * 16_807) % 2_147_483_647) / 2_147_483_647;
    const lag = new IndexLag(backend, { minMs: 0, maxMs: 500 }, random);
    let walks = 0;
    const queues = (lag as unknown as { queues: Map<string, unknown> }).queues;
    queues[Symbol.iterator] = function () {
      walks++;
      return Map.prototype[Symbol.iterator].call(this) as MapIterator<[string, unknown]>;
    };

    for (let n = 1; n <= WRITES; n++) {
      for (let i = 0; i < ITEMS; i++) {
        const pk = { S: `item-${i}` };
        lag.record('t', pk.S, { pk }, { pk, n: { N: String(n) } }, Date.now());
      }
      await vi.advanceTimersByTimeAsync(150);
    }
    await vi.advanceTimersByTimeAsync(5_000);

    expect(lag.stats()).toMatchObject({ pending: 0 });
    expect(lag.stats().failures).toBeGreaterThan(0);
    expect(overlaps).toBe(0);
    expect(applied.size).toBe(ITEMS);
    for (const ns of applied.values()) {
      expect(ns).toEqual([...ns].sort((a, b) => a - b));
      expect(ns.at(-1)).toBe(WRITES);
    }
    // The timer fired hundreds of times; none of them looked through every item's queue.
    expect(walks).toBe(0);
    await lag.close();
  });
});
