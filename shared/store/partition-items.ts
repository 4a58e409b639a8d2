/** Every item of one table partition (or of a range of its sort keys), page after page: for what must be read whole. */
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { KEY } from '../table-layout.js';

export interface PartitionRead {
  doc: DynamoDBDocumentClient;
  tableName: string;
  partition: string;
  /** Strongly consistent (twice the read units) when a stale view would be wrong, not merely late. */
  consistent?: boolean;
  /** Only these attributes (the partition key is always allowed in names). */
  attributes?: readonly string[];
  /** A fresh deadline per page: the SDK's request timeout only warns. */
  deadlineMs?: number;
  /** Only items whose sort key is between these two (both included). */
  sortBetween?: readonly [string, string];
}

export async function readPartitionItems<T>(read: PartitionRead): Promise<T[]> {
  const projected = Object.fromEntries((read.attributes ?? []).map((a, i) => [`#a${i}`, a]));
  const items: T[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await read.doc.send(
      new QueryCommand({
        TableName: read.tableName,
        KeyConditionExpression: read.sortBetween ? '#pk = :pk AND #sk BETWEEN :from AND :to' : '#pk = :pk',
        ExpressionAttributeNames: {
          '#pk': KEY.partition,
          ...(read.sortBetween ? { '#sk': KEY.sort } : {}),
          ...projected,
        },
        ExpressionAttributeValues: {
          ':pk': read.partition,
          ...(read.sortBetween ? { ':from': read.sortBetween[0], ':to': read.sortBetween[1] } : {}),
        },
        ...(read.attributes ? { ProjectionExpression: Object.keys(projected).join(', ') } : {}),
        ...(read.consistent ? { ConsistentRead: true } : {}),
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
      read.deadlineMs === undefined ? {} : { abortSignal: AbortSignal.timeout(read.deadlineMs) },
    );
    items.push(...((out.Items ?? []) as T[]));
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return items;
}
