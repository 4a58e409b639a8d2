/**
 * Write capacity a change of one item costs, counting the index writes DynamoDB bills but dynalite
 * leaves out. Pure: computed from the item before and after and the index layout, or from the item
 * before and the edge of the state machine taken (shared/store/transitions.ts).
 * Rules (DynamoDB developer guide, "Provisioned throughput considerations for GSIs"): an index whose
 * key appears costs one write; whose key disappears, one; whose key changes, two (delete and put);
 * whose key stays but a projected attribute changes, one; otherwise nothing.
 */
import { applyTransition, type Transition } from './transitions.js';
import { INDEX, KEY } from '../table-layout.js';

type Item = Record<string, unknown>;

/** DynamoDB's item size: attribute names plus values (strings in UTF-8, numbers about one byte per two digits). */
export function itemSizeBytes(item: object): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item as Item)) {
    if (value === undefined) continue;
    bytes += Buffer.byteLength(name, 'utf8') + valueSize(value);
  }
  return bytes;
}

function valueSize(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (typeof value === 'number')
    return Math.ceil(String(Math.abs(value)).replace(/[.-]/g, '').length / 2) + 1;
  if (typeof value === 'boolean' || value === null) return 1;
  if (Array.isArray(value)) return 3 + value.reduce((sum: number, v) => sum + 1 + valueSize(v), 0);
  if (typeof value === 'object') return 3 + itemSizeBytes(value as Item) + Object.keys(value as Item).length;
  return 0;
}

const units = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));

export interface WriteCost {
  table: number;
  indexes: Record<string, number>;
  total: number;
}

export function writeCost(before: object | undefined, after: object | undefined): WriteCost {
  const table = units(Math.max(before ? itemSizeBytes(before) : 0, after ? itemSizeBytes(after) : 0));
  const indexes: Record<string, number> = {};
  for (const index of Object.values(INDEX)) {
    const projected = [
      KEY.partition,
      KEY.sort,
      index.partition,
      index.sort,
      ...('include' in index ? index.include : []),
    ];
    const entry = (item: Item | undefined) =>
      item && item[index.partition] !== undefined && item[index.sort] !== undefined
        ? Object.fromEntries(projected.map((a) => [a, item[a]]))
        : undefined;
    const [old, now] = [entry(before as Item | undefined), entry(after as Item | undefined)];
    let cost = 0;
    if (old && now) {
      const keyChanged = old[index.partition] !== now[index.partition] || old[index.sort] !== now[index.sort];
      cost = keyChanged
        ? units(itemSizeBytes(old)) + units(itemSizeBytes(now))
        : JSON.stringify(old) === JSON.stringify(now)
          ? 0
          : units(itemSizeBytes(now));
    } else if (old || now) {
      cost = units(itemSizeBytes((old ?? now)!));
    }
    indexes[index.name] = cost;
  }
  return { table, indexes, total: table + Object.values(indexes).reduce((a, b) => a + b, 0) };
}

/**
 * What taking `transition` from the stored item `before` costs (an update; the write id the store
 * stamps replaces one of the same length). For an enqueue, price the put: writeCost(undefined, item).
 */
export function transitionCost(before: object, transition: Transition): WriteCost {
  return writeCost(before, applyTransition(before, transition));
}
