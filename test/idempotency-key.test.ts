/**
 * An idempotency key names its task (ids.ts hashes it as UTF-8): two keys that differ must name two
 * tasks. Lone surrogates are refused (review 2, finding 7); surrogate pairs are text like any other.
 */
import { describe, expect, it } from 'vitest';
import { idempotentTaskId } from '../shared/ids.js';
import { idempotencyKeySchema } from '../shared/task-inputs.js';

describe('idempotency keys', () => {
  it('refuses half a surrogate pair, wherever it is, saying what to fix', () => {
    for (const key of ['order-\ud800', 'order-\udbff', '\udc00order', 'a\ud83d', '\ude00b'])
      expect(idempotencyKeySchema.safeParse(key).error?.issues[0]?.message, JSON.stringify(key)).toMatch(
        /well-formed Unicode/,
      );
    // Why: as UTF-8 both halves are U+FFFD, so these named one task.
    expect(idempotentTaskId('o', 'order-\ud800')).toBe(idempotentTaskId('o', 'order-\udbff'));
  });

  it('takes whole pairs (emoji, rare CJK) and gives different keys different ids', () => {
    const keys = ['order-😀', 'order-😁', 'order-𠀀', 'order-é'];
    for (const key of keys) expect(idempotencyKeySchema.parse(key)).toBe(key);
    expect(new Set(keys.map((k) => idempotentTaskId('o', k))).size).toBe(keys.length);
  });
});
