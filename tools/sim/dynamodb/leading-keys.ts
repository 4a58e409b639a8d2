/**
 * `dynamodb:LeadingKeys`, the IAM condition key DynamoDB sets on each item request: the partition key
 * values the request touches. A policy confines a caller to some items with it
 * (`ForAllValues:StringLike: {"dynamodb:LeadingKeys": ["TASK#*"]}`). Pure: from the request body and
 * the table's key schema. For a Query it is the queried partition (the index's, on an index); a Scan
 * names none (IAM then finds the key absent, so a ForAllValues condition holds and a plain one fails).
 */
import type { AttributeValue } from './capacity-units.js';
import type { TableSchema } from './table-schemas.js';

type Json = Record<string, unknown>;

/** A key value as IAM compares it: its string form (S or N; a B key is base64, as sent). */
const text = (value: AttributeValue | undefined): string | undefined => {
  if (!value) return undefined;
  const v = value as { S?: string; N?: string; B?: string };
  return v.S ?? v.N ?? v.B;
};

/** The partition values a request touches, or undefined when it names none (Scan, table operations). */
export function leadingKeys(
  operation: string,
  body: Json,
  schemaOf: (table: string) => TableSchema | undefined,
): string[] | undefined {
  const hashOf = (table: unknown) => schemaOf(String(table))?.hashKey;
  const fromKey = (table: unknown, key: unknown) => {
    const hash = hashOf(table);
    return hash === undefined ? undefined : text((key as Record<string, AttributeValue> | undefined)?.[hash]);
  };
  const defined = (values: (string | undefined)[]) => values.filter((v): v is string => v !== undefined);
  switch (operation) {
    case 'GetItem':
    case 'UpdateItem':
    case 'DeleteItem':
      return defined([fromKey(body.TableName, body.Key)]);
    case 'PutItem':
      return defined([fromKey(body.TableName, body.Item)]);
    case 'BatchGetItem':
      return defined(
        Object.entries((body.RequestItems as Record<string, { Keys?: unknown[] }>) ?? {}).flatMap(
          ([table, request]) => (request.Keys ?? []).map((key) => fromKey(table, key)),
        ),
      );
    case 'BatchWriteItem':
      return defined(
        Object.entries((body.RequestItems as Record<string, Json[]>) ?? {}).flatMap(([table, writes]) =>
          writes.map((w) =>
            fromKey(
              table,
              (w.PutRequest as Json | undefined)?.Item ?? (w.DeleteRequest as Json | undefined)?.Key,
            ),
          ),
        ),
      );
    case 'Query':
      return defined([queriedPartition(body, schemaOf(String(body.TableName)))]);
    default:
      return undefined;
  }
}

/** The value the key condition sets the (table's or index's) partition key equal to. */
function queriedPartition(body: Json, schema: TableSchema | undefined): string | undefined {
  if (!schema) return undefined;
  const index = body.IndexName ? schema.gsis.find((g) => g.name === body.IndexName) : undefined;
  const hash = index ? index.hashKey : schema.hashKey;
  const names = (body.ExpressionAttributeNames as Record<string, string>) ?? {};
  const values = (body.ExpressionAttributeValues as Record<string, AttributeValue>) ?? {};
  for (const part of String(body.KeyConditionExpression ?? '').split(/\s+AND\s+/i)) {
    const match = /^\s*\(?\s*([#\w]+)\s*=\s*(:\w+)\s*\)?\s*$/.exec(part);
    if (!match) continue;
    const attribute = match[1]!.startsWith('#') ? names[match[1]!] : match[1];
    if (attribute === hash) return text(values[match[2]!]);
  }
  return undefined;
}
