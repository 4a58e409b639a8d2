/**
 * What the gate needs to know of each table to be as strict as DynamoDB: its key attributes, its
 * global secondary indexes (which lag and throttle on their own) and its local ones (which do not),
 * and its TTL attribute. Read once from DescribeTable on the emulator.
 */
import type { Backend } from './backend.js';
import type { AttributeValue, Item } from './capacity-units.js';

export interface IndexSchema {
  name: string;
  arn: string;
  hashKey: string;
  rangeKey?: string;
  /** The non-key attributes the index holds: all (ALL), the named ones (INCLUDE), or none (KEYS_ONLY). */
  projected: 'ALL' | string[];
}

export interface TableSchema {
  name: string;
  arn: string;
  hashKey: string;
  rangeKey?: string;
  gsis: IndexSchema[];
  lsis: string[];
  ttlAttribute?: string;
  /** What CreateTable needs to make a copy with the same keys and GSIs. */
  description: TableDescription;
}

interface KeyElement {
  AttributeName: string;
  KeyType: 'HASH' | 'RANGE';
}

export interface TableDescription {
  KeySchema: KeyElement[];
  AttributeDefinitions: { AttributeName: string; AttributeType: string }[];
  GlobalSecondaryIndexes?: {
    IndexName: string;
    KeySchema: KeyElement[];
    Projection: { ProjectionType?: string; NonKeyAttributes?: string[] };
  }[];
  LocalSecondaryIndexes?: { IndexName: string }[];
}

const keyOfType = (schema: KeyElement[], type: 'HASH' | 'RANGE') =>
  schema.find((k) => k.KeyType === type)?.AttributeName;

export async function describeTable(
  backend: Backend,
  table: { name: string; arn: string; ttlAttribute?: string },
): Promise<TableSchema> {
  const { Table: description } = await backend.call<{ Table: TableDescription }>('DescribeTable', {
    TableName: table.name,
  });
  const rangeKey = keyOfType(description.KeySchema, 'RANGE');
  return {
    name: table.name,
    arn: table.arn,
    hashKey: keyOfType(description.KeySchema, 'HASH')!,
    ...(rangeKey ? { rangeKey } : {}),
    gsis: (description.GlobalSecondaryIndexes ?? []).map((g) => {
      const gsiRange = keyOfType(g.KeySchema, 'RANGE');
      return {
        name: g.IndexName,
        arn: `${table.arn}/index/${g.IndexName}`,
        hashKey: keyOfType(g.KeySchema, 'HASH')!,
        ...(gsiRange ? { rangeKey: gsiRange } : {}),
        projected:
          g.Projection.ProjectionType === 'ALL' || g.Projection.ProjectionType === undefined
            ? 'ALL'
            : (g.Projection.NonKeyAttributes ?? []),
      };
    }),
    lsis: (description.LocalSecondaryIndexes ?? []).map((l) => l.IndexName),
    ...(table.ttlAttribute ? { ttlAttribute: table.ttlAttribute } : {}),
    description,
  };
}

/** The primary key of an item (or of a Key), only the key attributes. */
export function keyOf(schema: TableSchema, item: Item): Item {
  const key: Item = { [schema.hashKey]: item[schema.hashKey]! };
  if (schema.rangeKey) key[schema.rangeKey] = item[schema.rangeKey]!;
  return key;
}

/** A stable string for an attribute value or a key (map keys, partition-key labels). */
export function valueString(value: AttributeValue | undefined): string {
  if (!value) return '';
  const [type, v] = Object.entries(value)[0] ?? ['', ''];
  return `${type}:${typeof v === 'string' ? v : JSON.stringify(v)}`;
}

export function keyString(schema: TableSchema, key: Item): string {
  return schema.rangeKey
    ? `${valueString(key[schema.hashKey])}\u0000${valueString(key[schema.rangeKey])}`
    : valueString(key[schema.hashKey]);
}
