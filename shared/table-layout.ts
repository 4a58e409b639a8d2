/**
 * The single source of the table's shape: key names, index names and projections, shard count and
 * the encodings of every key. Tests, the local stack and the CDK stack all read it from here.
 */
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { fnv1a } from './ids.js';

/** Ready, lease and delay partitions per task type. 16 keeps 32 racing workers at ~0.02 lost writes per claim. */
export const SHARD_COUNT = 16;

export const KEY = { partition: 'pk', sort: 'sk' } as const;

export const INDEX = {
  /** Only QUEUED tasks that are due, head first: priority DESC, availableAt ASC, createdAt ASC. */
  ready: { name: 'ready', partition: 'readyPk', sort: 'readySk', sortType: 'S' },
  /**
   * Only leased tasks, by lease expiry, sharded (`LEASE#<shard>`): what recovery sweeps for expired
   * leases, and what a claim and one renewal in five write. Named `sweep` since it also held delayed
   * tasks: the name and keys stay, so a deployed table updates in place (one index added per deploy).
   */
  lease: { name: 'sweep', partition: 'sweepPk', sort: 'sweepAt', sortType: 'N' },
  /**
   * Only delayed tasks, by due time, sharded (`DELAY#<shard>`). Apart from the leases so that a bulk
   * delayed enqueue, which may throttle this index, never throttles a claim or a renewal: DynamoDB
   * throttles a base-table write when an index it updates cannot take the write.
   */
  delay: { name: 'delays', partition: 'delayPk', sort: 'delayAt', sortType: 'N' },
  /**
   * A caller's tasks, newest first, spread over OWNER_SHARDS partitions per owner (a list merges them).
   * Keys never change after enqueue, so status changes never write it.
   */
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

/**
 * Partitions per type holding rotated tasks (grouped ones, and every task of a type with fair shares;
 * group-rules.ts). Few, since a claimer reads each from a cursor; four carry about 4,000 index writes
 * a second, 2,000 grouped tasks a second per type.
 */
export const ROTATION_SHARDS = 4;
/** One of a type's rotation partitions: `<type>#rotation#<n>` (a type has no `#`, so no shard or lane is named so). */
export const rotationPartition = (type: string, n: number) => `${type}#rotation#${n}`;
/** Every rotation partition of a type. */
export const rotationPartitions = (type: string) =>
  Array.from({ length: ROTATION_SHARDS }, (_, n) => rotationPartition(type, n));
/** The rotation partition a rotation key's tasks wait in. */
export const rotationPartitionOf = (type: string, rotation: string) =>
  rotationPartition(type, fnv1a(`rotation#${rotation}`) % ROTATION_SHARDS);

/**
 * A group's slots (group-rules.ts): partition `GROUP#<type>#<rotation key>`, one item per slot. A group
 * of its own partition, so one busy group's slot writes never share a partition with another's.
 */
export const groupSlotPartition = (type: string, rotation: string) => `GROUP#${type}#${rotation}`;

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

/** The index a sweep partition lives in: `LEASE#<shard>` in the lease index, `DELAY#<shard>` in the delay index. */
export function sweepIndexOf(partition: string): typeof INDEX.lease | typeof INDEX.delay {
  if (partition.startsWith('LEASE#')) return INDEX.lease;
  if (partition.startsWith('DELAY#')) return INDEX.delay;
  throw new RangeError(`"${partition}" is neither a lease nor a delay partition`);
}

/**
 * Owner-index partitions per owner. A caller is often one producer role (every session of a role is
 * that role), and one index partition takes about 1,000 writes a second: with one partition per owner
 * that was the ceiling on a producer's enqueues (and on the fires of its schedules). Eight spread a
 * producer's enqueues to about 8,000 a second, what one type's sixteen ready partitions carry (two
 * ready writes per task), so the owner index is no longer the first limit. More would only make every
 * list page dearer: a page reads every shard of its owner (one Query each, at least 0.5 read units).
 * One digit: the partition's text then names exactly one owner and shard (see taskOwnerPartition).
 */
export const OWNER_SHARDS = 8;

/** The owner-index shard of a task: from its id, fixed at enqueue (idempotent ids are deterministic, so is this). */
export const ownerShardForId = (id: string) => fnv1a(`owner#${id}`) % OWNER_SHARDS;

/**
 * A task owner's owner-index partition `<shard>#<owner>`. The shard goes first so no owner's
 * partition can be another owner's, nor a schedule list's `SCHEDULES#<owner>` (a partition that
 * starts with a digit is never one of those).
 */
export const taskOwnerPartition = (owner: string, shard: number) => `${shard}#${owner}`;
/** Every owner-index partition holding `owner`'s tasks: a list reads them all and merges them. */
export const taskOwnerPartitions = (owner: string) =>
  Array.from({ length: OWNER_SHARDS }, (_, shard) => taskOwnerPartition(owner, shard));
/** The owner-index partition a task is written to at enqueue. */
export const taskOwnerPartitionOf = (owner: string, id: string) =>
  taskOwnerPartition(owner, ownerShardForId(id));

export const ownerSortKey = (createdAt: number, id: string) => `${pad(createdAt, 13)}#${id}`;

/**
 * Slot items per partition of a concurrency limit. A held slot is written every heartbeat (10 s) and
 * twice per task it admits (take, release): 250 busy slots with tasks of half a second are about
 * 1,000 writes a second, one partition's limit. A limit up to 250 stays one partition (one Query a
 * claim round); a limit of 10,000 is 40 partitions, read in parallel.
 */
export const SLOTS_PER_PARTITION = 250;

/**
 * Concurrency-limit slots: one item per slot, slot i in partition floor(i / SLOTS_PER_PARTITION) of
 * its scope: `LIMIT#<scope>` for the first, `LIMIT#<scope>#<n>` for the others. Scopes are `global`
 * and `type#<type>`, and a type has no `#`, so no scope's partition is another's.
 */
export const limitPartition = (scope: string, partition = 0) =>
  partition === 0 ? `LIMIT#${scope}` : `LIMIT#${scope}#${partition}`;
/** The partition of a limit's scope that holds slot `index`. */
export const slotPartitionOf = (index: number) => Math.floor(index / SLOTS_PER_PARTITION);
/** How many partitions the slots of a limit of `limit` take. */
export const slotPartitionCount = (limit: number) => Math.ceil(limit / SLOTS_PER_PARTITION);
export const slotSortKey = (index: number) => `SLOT#${pad(index, 5)}`;

/** A task type's rate-limit tokens (rate-rules.ts): partition `RATE#<type>`, one item per token. */
export const ratePartition = (type: string) => `RATE#${type}`;
export const rateTokenSortKey = (index: number) => `TOKEN#${pad(index, 4)}`;

/**
 * One owner's per-minute outcome counters (stats/outcome-store.ts): partition `STATS#<owner>`, one
 * item per minute, its sort key the minute's start in epoch ms, zero-padded so text order is time
 * order and one Query `between` reads an hour. No other partition starts with `STATS#` (tasks are
 * `TASK#`, locks `LOCK#`, limits `LIMIT#`, rate tokens `RATE#`, schedules `SCHEDULES#` and `FIRES#`, and `QUEUE`, `FLEET`),
 * and the items carry no index key, so no index sees them.
 */
export const statsPartition = (owner: string) => `STATS#${owner}`;
export const statsSortKey = (minuteStart: number) => pad(minuteStart, 13);

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
