/** Every item of one table partition, page after page: for partitions that must be read whole. */
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
}

export async function readPartitionItems<T>(read: PartitionRead): Promise<T[]> {
  const projected = Object.fromEntries((read.attributes ?? []).map((a, i) => [`#a${i}`, a]));
  const items: T[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await read.doc.send(
      new QueryCommand({
        TableName: read.tableName,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': KEY.partition, ...projected },
        ExpressionAttributeValues: { ':pk': read.partition },
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
