/**
 * The single source of the table's shape: key names, index names and projections, shard count and
 * the encodings of every key. Tests, the local stack and the CDK stack all read it from here.
 */
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { fnv1a } from './ids.js';

/** Ready and sweep partitions per task type. 16 keeps 32 racing workers at ~0.02 lost writes per claim. */
export const SHARD_COUNT = 16;

export const KEY = { partition: 'pk', sort: 'sk' } as const;

export const INDEX = {
  /** Only QUEUED tasks that are due, head first: priority DESC, availableAt ASC, createdAt ASC. */
  ready: { name: 'ready', partition: 'readyPk', sort: 'readySk', sortType: 'S' },
  /** Only leased tasks (by lease expiry) and delayed tasks (by due time), sharded. */
  sweep: { name: 'sweep', partition: 'sweepPk', sort: 'sweepAt', sortType: 'N' },
  /** A caller's tasks, newest first. Keys never change after enqueue, so status changes never write it. */
  owner: { name: 'owner', partition: 'ownerPk', sort: 'ownerSk', sortType: 'S', include: ['type'] },
} as const;

/** Largest priority magnitude; priorities are integers in [-PRIORITY_LIMIT, PRIORITY_LIMIT]. */
export const PRIORITY_LIMIT = 1000;

const pad = (n: number, width: number) => String(n).padStart(width, '0');

export const taskKey = (id: string) => ({ [KEY.partition]: `TASK#${id}`, [KEY.sort]: 'TASK' });
export const taskIdFromPk = (pk: string) => pk.slice('TASK#'.length);

/** The priority most tasks run at; its ready entries are spread over SHARD_COUNT partitions per type. */
export const DEFAULT_PRIORITY = 0;

/**
 * Where a due task waits. Default-priority tasks are spread over the type's shards (no hot partition);
 * every other priority waits in the type's one lane, sorted by priority, so a claimer learns the
 * highest waiting priority of a type with one query instead of sixteen (see claim.ts).
 */
export const readyPartition = (type: string, shard: number, priority: number) =>
  priority === DEFAULT_PRIORITY ? shardPartition(type, shard) : lanePartition(type);
/** One of the 16 partitions holding a type's default-priority tasks. */
export const shardPartition = (type: string, shard: number) => `${type}#${shard}`;
/** The partition holding a type's tasks of every priority but the default, highest first. */
export const lanePartition = (type: string) => `${type}#lane`;

/** Sorts ascending into the claim order: higher priority first, then earlier due, then older. */
export function readySortKey(priority: number, availableAt: number, createdAt: number, id: string): string {
  return `${pad(PRIORITY_LIMIT - priority, 4)}#${pad(availableAt, 13)}#${pad(createdAt, 13)}#${id}`;
}

/** The due time encoded in a ready sort key (its second part). */
export const availableAtOfReadySortKey = (readySk: string) => Number(readySk.split('#')[1]);

/** The priority part of a ready sort key: heads with equal prefixes have equal priority. */
export const readyPriorityPrefix = (readySk: string) => readySk.slice(0, readySk.indexOf('#'));

/** The priority encoded in a ready sort key. */
export const priorityOfReadySortKey = (readySk: string) =>
  PRIORITY_LIMIT - Number(readyPriorityPrefix(readySk));

export const leaseSweepPartition = (shard: number) => `LEASE#${shard}`;
export const delaySweepPartition = (shard: number) => `DELAY#${shard}`;

export const ownerSortKey = (createdAt: number, id: string) => `${pad(createdAt, 13)}#${id}`;

/** Concurrency-limit slots: one partition per limit scope, one item per slot. */
export const limitPartition = (scope: string) => `LIMIT#${scope}`;
export const slotSortKey = (index: number) => `SLOT#${pad(index, 5)}`;

/** The shard a task lives in, fixed at enqueue. */
export function shardForId(id: string): number {
  return fnv1a(id) % SHARD_COUNT;
}

/** TTL attribute (epoch seconds) set on finished tasks. */
export const TTL_ATTRIBUTE = 'expiresAt';

/** CreateTable input for dynalite and for scripts; the CDK stack builds the same shape from INDEX. */
export function createTableInput(tableName: string): CreateTableCommandInput {
  const indexes = Object.values(INDEX);
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    KeySchema: [
      { AttributeName: KEY.partition, KeyType: 'HASH' },
      { AttributeName: KEY.sort, KeyType: 'RANGE' },
    ],
    AttributeDefinitions: [
      { AttributeName: KEY.partition, AttributeType: 'S' },
      { AttributeName: KEY.sort, AttributeType: 'S' },
      ...indexes.flatMap((ix) => [
        { AttributeName: ix.partition, AttributeType: 'S' as const },
        { AttributeName: ix.sort, AttributeType: ix.sortType },
      ]),
    ],
    GlobalSecondaryIndexes: indexes.map((ix) => ({
      IndexName: ix.name,
      KeySchema: [
        { AttributeName: ix.partition, KeyType: 'HASH' as const },
        { AttributeName: ix.sort, KeyType: 'RANGE' as const },
      ],
      Projection:
        'include' in ix
          ? { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: [...ix.include] }
          : { ProjectionType: 'KEYS_ONLY' as const },
    })),
  };
}
