/**
 * How many tasks wait in a type's rotation partitions (group-rules.ts): grouped tasks and those of a
 * type with fair shares. Their sort keys start with the rotation key, so the depth gauge's position
 * estimates (depth-keys.ts) do not apply: each partition is counted (a keys-only COUNT Query, up to
 * `limit` entries; past that the count is a lower bound, 'sampled'). Without it a type whose waiting
 * tasks are all rotated would look empty to the scheduled tick, which would then start no worker.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { INDEX, rotationPartitions } from '../table-layout.js';
import type { StoreContext } from './context.js';
import type { CountBasis } from './depth-estimate.js';
import { deadline } from './dynamo.js';

export async function rotationDepth(
  ctx: StoreContext,
  type: string,
  limit: number,
): Promise<{ count: number; basis: CountBasis }> {
  const counts = await Promise.all(
    rotationPartitions(type).map(async (partition) => {
      const out = await ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          IndexName: INDEX.ready.name,
          KeyConditionExpression: '#p = :p',
          ExpressionAttributeNames: { '#p': INDEX.ready.partition },
          ExpressionAttributeValues: { ':p': partition },
          Select: 'COUNT',
          Limit: limit,
        }),
        deadline(ctx.config.requestDeadlineMs),
      );
      return { count: out.Count ?? 0, more: out.LastEvaluatedKey !== undefined };
    }),
  );
  return {
    count: counts.reduce((sum, c) => sum + c.count, 0),
    basis: counts.some((c) => c.more) ? 'sampled' : 'counted',
  };
}
