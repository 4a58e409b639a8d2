/**
 * What a write costs each global secondary index, as DynamoDB bills it
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.Writes): an index
 * holds an entry for an item only while the item has the index's key attributes; the entry is the
 * item's projection (table keys, index keys, and the projected attributes: none for KEYS_ONLY, the
 * named ones for INCLUDE, all for ALL) plus 100 bytes. A write that adds an entry costs one put of its
 * size, one that removes it one delete, one that changes the index key a delete and a put, one that
 * changes only projected attributes one put, and one that changes nothing the index holds costs the
 * index nothing. (Charging every index the whole item on every write, as the sim did, overstated a
 * claim and an outcome write by several units.)
 */
import { itemSize, writeUnits, type Item } from './capacity-units.js';
import { valueString, type IndexSchema, type TableSchema } from './table-schemas.js';

/** One item's entry in one index: its index key and its projection, as text to compare, and its size. */
export interface IndexEntry {
  key: string;
  projection: string;
  size: number;
}

/** DynamoDB adds this many bytes of overhead to each index entry. */
const INDEX_ENTRY_OVERHEAD = 100;

export function indexEntry(
  schema: TableSchema,
  gsi: IndexSchema,
  item: Item | undefined,
): IndexEntry | undefined {
  if (!item?.[gsi.hashKey] || (gsi.rangeKey && !item[gsi.rangeKey])) return undefined;
  const names =
    gsi.projected === 'ALL'
      ? Object.keys(item)
      : [schema.hashKey, schema.rangeKey, gsi.hashKey, gsi.rangeKey, ...gsi.projected].filter(
          (n): n is string => n !== undefined,
        );
  const entry: Item = {};
  for (const name of [...new Set(names)].sort()) if (item[name]) entry[name] = item[name];
  return {
    key: `${valueString(item[gsi.hashKey])}\u0000${gsi.rangeKey ? valueString(item[gsi.rangeKey]) : ''}`,
    projection: JSON.stringify(entry),
    size: itemSize(entry) + INDEX_ENTRY_OVERHEAD,
  };
}

/** The write units one index is charged for a write that turns `before` into `after`. */
export function indexWriteUnits(before: IndexEntry | undefined, after: IndexEntry | undefined): number {
  if (!before && !after) return 0;
  if (!before) return writeUnits(after!.size);
  if (!after) return writeUnits(before.size);
  if (before.key !== after.key) return writeUnits(before.size) + writeUnits(after.size);
  if (before.projection === after.projection) return 0;
  return writeUnits(Math.max(before.size, after.size));
}
