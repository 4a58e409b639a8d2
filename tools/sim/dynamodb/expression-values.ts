/**
 * The value an expression gives an attribute, read without a full expression parser: the `#name = :v`
 * (or `name = :v`, either way round) of a KeyConditionExpression's partition key, or of a SET clause of
 * an UpdateExpression. The gate needs it to know, before a request runs, which partition it hits.
 */
import type { AttributeValue } from './capacity-units.js';

export function valueGiven(
  expression: unknown,
  body: { ExpressionAttributeNames?: unknown; ExpressionAttributeValues?: unknown },
  attribute: string,
): AttributeValue | undefined {
  const values = (body.ExpressionAttributeValues ?? {}) as Record<string, AttributeValue>;
  const names = (body.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const resolve = (token: string) => (token.startsWith('#') ? names[token] : token);
  for (const m of String(expression ?? '').matchAll(/([#:]?[\w.-]+)\s*=\s*([#:]?[\w.-]+)/g)) {
    const [left, right] = [m[1]!, m[2]!];
    if (resolve(left) === attribute && right.startsWith(':')) return values[right];
    if (resolve(right) === attribute && left.startsWith(':')) return values[left];
  }
  return undefined;
}
