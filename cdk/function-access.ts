/** Exactly the DynamoDB actions each function's code uses (see shared/store/), on exactly what it uses. */
import { INDEX } from '../shared/table-layout.js';
import type { FunctionName } from './function-entries.js';
import type { TableAccess } from './leasehold-function.js';

/**
 * What the worker's item actions touch: tasks and their bodies (`TASK#<id>`), the fleet's seats
 * (`FLEET`), concurrency slots (`LIMIT#...`), rate-limit tokens (`RATE#<type>`), group slots
 * (`GROUP#<type>#<rotation>`), the queue summary
 * (`QUEUE`), the owners' outcome counters (`STATS#<owner>`), and locks (`LOCK#<key>`, the library a
 * handler may use).
 */
export const WORKER_PARTITIONS = [
  'TASK#*',
  'FLEET',
  'LIMIT#*',
  'RATE#*',
  'GROUP#*',
  'QUEUE',
  'STATS#*',
  'LOCK#*',
];
/**
 * What the worker only reads: the operators' type controls (`TYPES`). A task handler runs under the
 * worker's role, so it must not be able to pause or resume a type (an operator's grant).
 */
export const WORKER_READ_ONLY_PARTITIONS = ['TYPES'];

export const FUNCTION_ACCESS: Record<FunctionName, TableAccess> = {
  // enqueue (put, read-back), get, cancel, retry, list (owner index + batch read); schedule
  // definitions and fires (query their partitions, put, update the sync state, delete a definition);
  // GET /stats (the queue summary, the lease index + batch read, the caller's
  // outcome counters) and the counters' flush after a cancel (UpdateItem); GET /types (the type
  // controls, the queue summary, the lease and delay indexes + batch read) and pause and resume
  // (UpdateItem on a type's controls)
  api: {
    table: [
      'dynamodb:BatchGetItem',
      'dynamodb:DeleteItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ],
    indexes: {
      [INDEX.owner.name]: ['dynamodb:Query'],
      [INDEX.lease.name]: ['dynamodb:Query'],
      [INDEX.delay.name]: ['dynamodb:Query'],
    },
  },
  // claim (ready heads, slot and fleet-seat partitions on the table), lease writes, read-backs, a
  // payload kept apart (read at claim) and a result or error kept apart (an UpdateItem that creates
  // its item: shared/store/body-layout.ts); the timekeeper (seat 0) reads the delay index and promotes
  // what falls due; flows: a handler's children (PutItem, store/children.ts), a parent's children read
  // when it runs again (BatchGetItem), its steps (a Query of its partition, store/steps.ts)
  // Task handlers run inside the worker with this role (docs/security.md): its item actions are held to
  // the partitions the worker itself uses (review 2, LOW-4), so a handler cannot touch schedule
  // definitions or fires.
  worker: {
    table: [
      'dynamodb:BatchGetItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ],
    indexes: { [INDEX.ready.name]: ['dynamodb:Query'], [INDEX.delay.name]: ['dynamodb:Query'] },
    leadingKeys: WORKER_PARTITIONS,
    readOnlyKeys: WORKER_READ_ONLY_PARTITIONS,
  },
  // sweep (lease and delay indexes + batch read), fixes and promotions, queue-depth counts (ready index,
  // and the type controls: which types have rotated tasks to count)
  // flows: a refused count on a parent is read back (GetItem), and a waiting parent's uncounted children read
  recovery: {
    table: ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
    indexes: {
      [INDEX.lease.name]: ['dynamodb:Query'],
      [INDEX.delay.name]: ['dynamodb:Query'],
      [INDEX.ready.name]: ['dynamodb:Query'],
    },
  },
  // a schedule tick: read the definition, enqueue (put, read-back), record the fire, mark a one-time
  // schedule's definition completed (UpdateItem: the sim's IAM gate found it missing). A fire's task is
  // due at once, and a due task's kick reads no seats (fleet/enqueue-kicker.ts): no Query.
  fire: {
    table: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
    indexes: {},
  },
};
