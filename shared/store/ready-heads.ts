/** Reads the heads of one ready partition (keys only, eventually consistent: a claim write re-checks each). */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { INDEX, shardForId, taskIdFromPk } from '../table-layout.js';
import type { Candidate } from './claim-state.js';
import type { StoreContext } from './context.js';
import { deadline } from './dynamo.js';

/** The first `limit` heads of one ready partition (after `startKey`); `exhausted` when there were no more. */
export async function readHeads(
  ctx: StoreContext,
  partition: string,
  type: string,
  shard: number | undefined,
  limit: number,
  startKey?: Record<string, unknown>,
): Promise<{ candidates: Candidate[]; exhausted: boolean; lastKey: Record<string, unknown> | undefined }> {
  const out = await ctx.doc.send(
    new QueryCommand({
      TableName: ctx.tableName,
      IndexName: INDEX.ready.name,
      KeyConditionExpression: '#p = :p',
      ExpressionAttributeNames: { '#p': INDEX.ready.partition },
      ExpressionAttributeValues: { ':p': partition },
      Limit: limit,
      ...(startKey ? { ExclusiveStartKey: startKey } : {}),
    }),
    deadline(ctx.config.requestDeadlineMs),
  );
  const candidates = (out.Items ?? []).map((item) => {
    const id = taskIdFromPk(item.pk as string);
    return { id, type, shard: shard ?? shardForId(id), readySk: item[INDEX.ready.sort] as string };
  });
  const exhausted = candidates.length < limit || out.LastEvaluatedKey === undefined;
  return { candidates, exhausted, lastKey: exhausted ? undefined : out.LastEvaluatedKey };
}
