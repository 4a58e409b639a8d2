/**
 * The sim bills index writes as DynamoDB does (GSI.html#GSI.Writes): by what a write changes in each
 * index's entry, at the entry's size (projection plus 100 bytes), not the whole item on every write.
 */
import { describe, expect, it } from 'vitest';
import { indexEntry, indexWriteUnits } from '../tools/sim/dynamodb/index-entries.js';
import type { IndexSchema, TableSchema } from '../tools/sim/dynamodb/table-schemas.js';

const keysOnly: IndexSchema = { name: 'ready', arn: 'a', hashKey: 'rpk', rangeKey: 'rsk', projected: [] };
const include: IndexSchema = { name: 'sweep', arn: 'b', hashKey: 'spk', projected: ['owner'] };
const all: IndexSchema = { name: 'all', arn: 'c', hashKey: 'apk', projected: 'ALL' };
const table = {
  name: 't',
  arn: 't',
  hashKey: 'pk',
  rangeKey: 'sk',
  gsis: [keysOnly, include, all],
} as unknown as TableSchema;

const s = (v: string) => ({ S: v });
const big = 'x'.repeat(3_000);
type TestItem = Record<string, { S: string }>;
const item = (extra: TestItem): TestItem => ({
  pk: s('TASK#1'),
  sk: s('T'),
  payload: s(big),
  ...extra,
});
const units = (gsi: IndexSchema, before: TestItem | undefined, after: TestItem | undefined) =>
  indexWriteUnits(indexEntry(table, gsi, before), indexEntry(table, gsi, after));

describe('index write units (sim, pure)', () => {
  it('a KEYS_ONLY entry costs one unit whatever the item size; no entry without both index keys', () => {
    expect(units(keysOnly, undefined, item({ rpk: s('R'), rsk: s('1') }))).toBe(1);
    expect(units(keysOnly, undefined, item({ rpk: s('R') }))).toBe(0); // sparse: no range key, no entry
  });

  it('a write that changes nothing the index holds costs it nothing; a projected attribute one put', () => {
    const before = item({ spk: s('S'), owner: s('a') });
    expect(units(include, before, { ...before, payload: s('other') })).toBe(0);
    expect(units(include, before, { ...before, owner: s('b') })).toBe(1);
  });

  it('a changed index key is a delete and a put; a removed entry one delete', () => {
    const before = item({ rpk: s('R'), rsk: s('1') });
    expect(units(keysOnly, before, item({ rpk: s('R'), rsk: s('2') }))).toBe(2);
    expect(units(keysOnly, before, item({}))).toBe(0 + 1);
  });

  it('an ALL projection is the item size plus 100 bytes, per started KB', () => {
    expect(units(all, undefined, item({ apk: s('A') }))).toBe(4); // 3,000 + keys + 100 bytes
    expect(units(all, item({ apk: s('A') }), item({ apk: s('A'), note: s('n') }))).toBe(4);
  });
});
