import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../clock.js';
import type { ProtocolConfig, TableConfig, WorkerSettings } from '../config.js';
import type { LeaseEvents } from '../events.js';
import type { IdGenerator, RandomSource } from '../ids.js';
import type { WriteTarget } from './conditional-write.js';
import type { HeldItems } from './held-items.js';
import type { RateLimit } from '../rate-rules.js';
import type { TypeGrouping } from '../group-rules.js';

/** The settings the store reads: where the table is, the protocol, and the claim strategy's two knobs. */
export type StoreConfig = TableConfig &
  ProtocolConfig &
  Pick<WorkerSettings, 'pollIntervalMs' | 'claimWindow'>;

/** What every store operation needs: the table, the checked config, and the injected clock and generators. */
export interface StoreContext {
  doc: DynamoDBDocumentClient;
  tableName: string;
  config: StoreConfig;
  clock: Clock;
  newId: IdGenerator;
  random: RandomSource;
  /**
   * Concurrency limits per task type: the definitions' own (defineTask({ concurrency })), with
   * LEASEHOLD_TYPE_CONCURRENCY taking precedence for a type it names.
   */
  typeLimits: Record<string, number>;
  /** Rate limits per task type, as the definitions declare them (defineTask({ rateLimit })). */
  typeRateLimits: Record<string, RateLimit>;
  /** Groups and fair shares per task type, as the definitions declare them (group-rules.ts). */
  typeGrouping: TypeGrouping;
  /** Lifecycle steps (claim intent, recovery fixes, readied tasks) for whoever subscribes. */
  events: LeaseEvents;
  /** The task items of the leases this store's callers hold, as last written (held-items.ts). */
  heldItems: HeldItems;
}

/**
 * Deadline of one write off the lease path (enqueue, cancel, retry, recovery): nothing there expires
 * while it waits, so it may wait longer than a lease-path write; three sends and a read-back still
 * fit in the API function's 10 s.
 */
export const REQUEST_WRITE_DEADLINE_MS = 2_000;

/**
 * The store's table and generators, as the conditional-write primitive takes them. Lease-path writes
 * (claim, renew, outcomes, slots) get LEASEHOLD_REQUEST_DEADLINE_MS: a lease can run out while they wait.
 */
export function writeTargetOf(ctx: StoreContext, path: 'lease' | 'request' = 'lease'): WriteTarget {
  const deadlineMs = path === 'lease' ? ctx.config.requestDeadlineMs : requestPathDeadlineMs(ctx);
  return { doc: ctx.doc, tableName: ctx.tableName, deadlineMs, newId: ctx.newId, random: ctx.random };
}

/** The deadline of one request off the lease path: a write as above, or a read for a caller (GET /stats). */
export const requestPathDeadlineMs = (ctx: StoreContext) =>
  Math.max(ctx.config.requestDeadlineMs, REQUEST_WRITE_DEADLINE_MS);
