/**
 * Gauges for the dashboard and the alarms: tasks due and waiting (ready index) with the due time of the
 * oldest, tasks under a lease and delayed tasks (sweep index), per shard. The ready entries are read
 * with their sort key only (it encodes the due time): a keys-only read costs what `Select: COUNT`
 * costs, since DynamoDB bills the entries it reads, not the ones it returns.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import {
  availableAtOfReadySortKey,
  delaySweepPartition,
  INDEX,
  lanePartition,
  leaseSweepPartition,
  SHARD_COUNT,
  shardPartition,
} from '../table-layout.js';
import type { StoreContext } from './context.js';

export interface QueueDepth {
  ready: number;
  leased: number;
  /** Waiting for their due time (delays and retry backoffs). */
  delayed: number;
  /** Due time of the longest-waiting ready task, if any is waiting. */
  oldestDueAt: number | undefined;
}

interface PartitionCount {
  count: number;
  oldestDueAt: number | undefined;
}

export async function queueDepth(ctx: StoreContext, types: string[]): Promise<QueueDepth> {
  const shards = Array.from({ length: SHARD_COUNT }, (_, s) => s);
  const readyPartitions = types.flatMap((type) => [
    lanePartition(type),
    ...shards.map((s) => shardPartition(type, s)),
  ]);
  const ready = await Promise.all(readyPartitions.map((p) => readPartition(ctx, INDEX.ready, p, true)));
  const leased = await Promise.all(
    shards.map((s) => readPartition(ctx, INDEX.sweep, leaseSweepPartition(s), false)),
  );
  const delayed = await Promise.all(
    shards.map((s) => readPartition(ctx, INDEX.sweep, delaySweepPartition(s), false)),
  );
  const sum = (xs: PartitionCount[]) => xs.reduce((a, b) => a + b.count, 0);
  const dueTimes = ready.flatMap((p) => (p.oldestDueAt === undefined ? [] : [p.oldestDueAt]));
  return {
    ready: sum(ready),
    leased: sum(leased),
    delayed: sum(delayed),
    oldestDueAt: dueTimes.length > 0 ? Math.min(...dueTimes) : undefined,
  };
}

async function readPartition(
  ctx: StoreContext,
  index: { name: string; partition: string; sort: string },
  partition: string,
  withDueTimes: boolean,
): Promise<PartitionCount> {
  let count = 0;
  let oldestDueAt: number | undefined;
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await ctx.doc.send(
      new QueryCommand({
        TableName: ctx.tableName,
        IndexName: index.name,
        KeyConditionExpression: '#p = :p',
        ExpressionAttributeNames: { '#p': index.partition, ...(withDueTimes ? { '#s': index.sort } : {}) },
        ExpressionAttributeValues: { ':p': partition },
        ...(withDueTimes ? { ProjectionExpression: '#s' } : { Select: 'COUNT' as const }),
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    count += out.Count ?? 0;
    for (const item of out.Items ?? []) {
      const dueAt = availableAtOfReadySortKey(String(item[index.sort]));
      if (oldestDueAt === undefined || dueAt < oldestDueAt) oldestDueAt = dueAt;
    }
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return { count, oldestDueAt };
}
