/**
 * Time to Live: DynamoDB deletes an item whose TTL attribute holds an epoch-seconds Number in the
 * past, in the background, typically within a few days; until then the item is still read and
 * written as usual. The sweeper scans each table with a TTL attribute every so often and deletes an
 * expired item once it has been expired for a delay drawn per item (up to maxDelayMs), on the
 * condition that the attribute still holds the expired value, so an item refreshed meanwhile survives.
 * As in DynamoDB, values more than five years in the past are ignored, deletes cost no capacity, and
 * the GSIs follow (through the gate's index lag).
 */
import { BackendError, type Backend } from './backend.js';
import type { Item } from './capacity-units.js';
import { keyOf, keyString, type TableSchema } from './table-schemas.js';

export interface TtlOptions {
  /** An expired item is deleted after a delay drawn uniformly in [0, maxDelayMs]; 0 deletes at the next sweep. */
  maxDelayMs: number;
  /** How often each table is scanned. */
  sweepEveryMs: number;
}

const FIVE_YEARS_S = 5 * 365 * 24 * 3600;

export class TtlSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private closed = false;
  /** The delay drawn for each expired item (by table, key and expiry), so each draw is made once. */
  private readonly delays = new Map<string, number>();
  private readonly deleted: Record<string, number> = {};
  private spared = 0;
  private sweeps = 0;
  private lastSweepAt: number | undefined;

  constructor(
    private readonly backend: Backend,
    private readonly tables: TableSchema[],
    readonly options: TtlOptions,
    /**
     * Called before each delete; what it returns is called after it, with whether the item went. The
     * gate tracks these deletes as it tracks its clients' writes, so the index lag follows them in order.
     */
    private readonly onDelete: (schema: TableSchema, key: Item) => (deleted: boolean) => void,
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {}

  start(): void {
    if (this.timer || !this.tables.some((t) => t.ttlAttribute)) return;
    this.timer = setInterval(() => void this.sweep(), this.options.sweepEveryMs);
    this.timer.unref();
  }

  /** One sweep of every table (a sweep already running is joined, not doubled). */
  sweep(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.running ??= this.sweepAll().finally(() => (this.running = undefined));
    return this.running;
  }

  private async sweepAll(): Promise<void> {
    for (const schema of this.tables) {
      if (schema.ttlAttribute) await this.sweepTable(schema, schema.ttlAttribute).catch(() => undefined);
    }
    this.sweeps++;
    this.lastSweepAt = this.now();
  }

  private async sweepTable(schema: TableSchema, attribute: string): Promise<void> {
    const seen = new Set<string | undefined>();
    const nowS = this.now() / 1000;
    const names: Record<string, string> = { '#ttl': attribute, '#hk': schema.hashKey };
    if (schema.rangeKey) names['#rk'] = schema.rangeKey;
    let ExclusiveStartKey: Item | undefined;
    do {
      const page: { Items?: Item[]; LastEvaluatedKey?: Item } = await this.backend.call('Scan', {
        TableName: schema.name,
        ConsistentRead: true,
        ProjectionExpression: ['#hk', ...(schema.rangeKey ? ['#rk'] : []), '#ttl'].join(', '),
        FilterExpression: '#ttl < :now AND #ttl > :floor',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: {
          ':now': { N: String(Math.floor(nowS)) },
          ':floor': { N: String(Math.floor(nowS) - FIVE_YEARS_S) },
        },
        ...(ExclusiveStartKey ? { ExclusiveStartKey } : {}),
      });
      for (const item of page.Items ?? []) {
        // Closed mid-sweep: delete nothing more (the backend is about to go).
        if (this.closed) return;
        seen.add(await this.consider(schema, attribute, item));
      }
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    // Forget the draws of items that were deleted or refreshed by others since.
    for (const id of this.delays.keys())
      if (id.startsWith(`${schema.name}\u0001`) && !seen.has(id)) this.delays.delete(id);
  }

  /** Deletes the item if its time has come; answers the id of its delay draw. */
  private async consider(schema: TableSchema, attribute: string, item: Item): Promise<string | undefined> {
    const expiry = item[attribute] as { N?: string } | undefined;
    if (!expiry?.N) return undefined;
    const expiredAt = Number(expiry.N) * 1000;
    const key = keyOf(schema, item);
    const id = `${schema.name}\u0001${keyString(schema, key)}\u0001${expiry.N}`;
    let delay = this.delays.get(id);
    if (delay === undefined) {
      delay = this.random() * this.options.maxDelayMs;
      this.delays.set(id, delay);
    }
    if (this.now() < expiredAt + delay) return id;
    const done = this.onDelete(schema, key);
    let deleted = false;
    try {
      await this.backend.call('DeleteItem', {
        TableName: schema.name,
        Key: key,
        ConditionExpression: '#ttl = :expiry',
        ExpressionAttributeNames: { '#ttl': attribute },
        ExpressionAttributeValues: { ':expiry': expiry },
      });
      this.deleted[schema.name] = (this.deleted[schema.name] ?? 0) + 1;
      deleted = true;
    } catch (error) {
      // Refreshed (or deleted) since the scan: DynamoDB's TTL would not delete it either.
      if (!(error instanceof BackendError && error.type === 'ConditionalCheckFailedException')) throw error;
      this.spared++;
    } finally {
      done(deleted);
    }
    this.delays.delete(id);
    return undefined;
  }

  stats() {
    return {
      maxDelayMs: this.options.maxDelayMs,
      sweepEveryMs: this.options.sweepEveryMs,
      sweeps: this.sweeps,
      lastSweepAt: this.lastSweepAt ? new Date(this.lastSweepAt).toISOString() : null,
      deleted: { ...this.deleted },
      spared: this.spared,
      waiting: this.delays.size,
    };
  }

  /** Stops sweeping; resolves once a sweep under way has stopped. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
