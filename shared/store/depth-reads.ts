/**
 * The depth gauge's one kind of request: one page of one index partition, its sort and table keys, eventually
 * consistent, optionally within a sort-key range, from a start key, or newest first. DynamoDB bills a
 * query by the size of the entries it reads (rounded up to 4 KB, half a unit each when eventually
 * consistent), not by what it returns, so the Limit is what bounds the cost.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { KEY } from '../table-layout.js';
import type { StoreContext } from './context.js';
import type { DepthIndex, Position, SortRange } from './depth-keys.js';

export interface SliceQuery {
  limit: number;
  /** Continue after this entry (a LastEvaluatedKey). */
  startKey?: Record<string, unknown> | undefined;
  range?: SortRange | undefined;
  newestFirst?: boolean;
}

export interface Slice {
  positions: Position[];
  /** The entries' table keys (`pk`), in the same order: what tells two reads of one entry apart from a tie. */
  ids: string[];
  /** Set when the read stopped at its Limit: entries may follow. */
  next: Record<string, unknown> | undefined;
}

export async function readSlice(
  ctx: StoreContext,
  index: DepthIndex,
  partition: string,
  query: SliceQuery,
): Promise<Slice> {
  const out = await ctx.doc.send(
    new QueryCommand({
      TableName: ctx.tableName,
      IndexName: index.name,
      KeyConditionExpression: query.range ? '#p = :p AND #s BETWEEN :from AND :to' : '#p = :p',
      ExpressionAttributeNames: { '#p': index.partition, '#s': index.sort, '#k': KEY.partition },
      ExpressionAttributeValues: {
        ':p': partition,
        ...(query.range ? { ':from': query.range[0], ':to': query.range[1] } : {}),
      },
      ProjectionExpression: '#s, #k',
      Limit: query.limit,
      ...(query.startKey ? { ExclusiveStartKey: query.startKey } : {}),
      ...(query.newestFirst ? { ScanIndexForward: false } : {}),
    }),
  );
  const items = out.Items ?? [];
  return {
    positions: items.map((item) => index.position(item[index.sort])),
    ids: items.map((item) => String(item[KEY.partition])),
    next: items.length >= query.limit ? out.LastEvaluatedKey : undefined,
  };
}
