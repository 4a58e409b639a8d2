/**
 * Gauges for the dashboard: tasks due and waiting (ready index), tasks under a lease and delayed tasks (sweep index),
 * counted per shard with `Select: COUNT` on the keys-only indexes (one query per partition and page).
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { delaySweepPartition, INDEX, leaseSweepPartition, readyPartition, SHARD_COUNT } from '../table-layout.js';
import type { StoreContext } from './context.js';

export interface QueueDepth {
  ready: number;
  leased: number;
  /** Waiting for their due time (delays and retry backoffs). */
  delayed: number;
}

export async function queueDepth(ctx: StoreContext, types: string[]): Promise<QueueDepth> {
  const shards = Array.from({ length: SHARD_COUNT }, (_, s) => s);
  const ready = await Promise.all(types.flatMap((type) => shards.map((s) => countPartition(ctx, INDEX.ready, readyPartition(type, s)))));
  const leased = await Promise.all(shards.map((s) => countPartition(ctx, INDEX.sweep, leaseSweepPartition(s))));
  const delayed = await Promise.all(shards.map((s) => countPartition(ctx, INDEX.sweep, delaySweepPartition(s))));
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  return { ready: sum(ready), leased: sum(leased), delayed: sum(delayed) };
}

async function countPartition(ctx: StoreContext, index: { name: string; partition: string }, partition: string): Promise<number> {
  let count = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await ctx.doc.send(
      new QueryCommand({
        TableName: ctx.tableName,
        IndexName: index.name,
        KeyConditionExpression: '#p = :p',
        ExpressionAttributeNames: { '#p': index.partition },
        ExpressionAttributeValues: { ':p': partition },
        Select: 'COUNT',
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    count += out.Count ?? 0;
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return count;
}
