/**
 * What the IAM gate adds to the emulator behind it so DynamoDB's strictness shows locally: GSI reads
 * that lag behind writes (index-lag.ts), on-demand throughput limits (throttle.ts) and TTL deletes
 * (ttl-sweeper.ts). Each request the gate lets through comes here: it is checked against the
 * throughput buckets, rewritten when it reads a GSI (to the lagging index view) or when part of a batch
 * is throttled, forwarded, and, once answered, charged; every successful write hands the item's new
 * image to the index lag.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Backend, type BackendAnswer } from './backend.js';
import type { Item } from './capacity-units.js';
import { rewritten, type Json } from './gate-answers.js';
import { IndexLag, INDEX_VIEW_SUFFIX, type IndexLagOptions } from './index-lag.js';
import { ReadRequests } from './read-requests.js';
import { describeTable, type TableSchema } from './table-schemas.js';
import { Throttle } from './throttle.js';
import type { WarmRates } from './table-from-template.js';
import { TtlSweeper, type TtlOptions } from './ttl-sweeper.js';
import { WriteRequests } from './write-requests.js';
import { WriteTracker } from './write-tracker.js';

export interface StrictOptions {
  /** GSI propagation delay, drawn uniformly per write; false (or maxMs 0) turns it off. Default 50-500 ms. */
  indexLag?: IndexLagOptions | false;
  /** Multiplies DynamoDB's on-demand limits (0.01: 40/120 per table, 10/30 per key a second); 0 turns throttling off. Default 1. */
  throttleScale?: number;
  /** TTL deletes; false turns them off. Default: up to 5 minutes after expiry, sweeping every 10 s. */
  ttl?: TtlOptions | false;
  /** The clock of the throughput buckets and the TTL sweeper (tests freeze it). */
  now?: () => number;
  /** Draws of the lag and of TTL delays (tests make them deterministic). */
  random?: () => number;
}

export const DEFAULT_INDEX_LAG: IndexLagOptions = { minMs: 50, maxMs: 500 };
export const DEFAULT_TTL: TtlOptions = { maxDelayMs: 5 * 60_000, sweepEveryMs: 10_000 };

export class StrictDynamoDb {
  private readonly schemas = new Map<string, TableSchema>();
  private readonly throttle: Throttle;
  private readonly lag: IndexLag | undefined;
  private readonly tracker: WriteTracker;
  private readonly ttl: TtlSweeper | undefined;
  private readonly writes: WriteRequests;
  private readonly reads: ReadRequests;

  private constructor(
    private readonly backend: Backend,
    schemas: TableSchema[],
    options: StrictOptions,
    warm: Map<string, WarmRates>,
  ) {
    for (const s of schemas) this.schemas.set(s.name, s);
    const now = options.now ?? Date.now;
    const random = options.random ?? Math.random;
    this.throttle = new Throttle(options.throttleScale ?? 1, now, warm);
    const lag = options.indexLag === undefined ? DEFAULT_INDEX_LAG : options.indexLag;
    this.lag = lag && lag.maxMs > 0 ? new IndexLag(backend, lag, random) : undefined;
    this.tracker = new WriteTracker(backend, (schema, key, keyStr, image, old, writtenAt, units) => {
      this.writes.chargeWrite(schema, key, image, old, units);
      // An item in no GSI before or after the write cannot show in a GSI read: no copy needed.
      const indexed = schema.gsis.some((g, i) => old?.gsiPartitions[i] !== undefined || image?.[g.hashKey]);
      if (this.lag && indexed) this.lag.record(schema.name, keyStr, key, image, writtenAt);
    });
    this.writes = new WriteRequests(this.schemas, this.throttle, this.tracker);
    this.reads = new ReadRequests(this.schemas, this.throttle, this.lag ? IndexLag.viewOf : undefined);
    const ttl = options.ttl === undefined ? DEFAULT_TTL : options.ttl;
    this.ttl = ttl
      ? new TtlSweeper(
          backend,
          schemas,
          ttl,
          (schema, key) => {
            const end = this.tracker.begin(schema, key);
            // TTL deletes are free in DynamoDB: no capacity charged.
            return (deleted) => end(deleted ? { kind: 'absent' } : undefined, 0);
          },
          now,
          random,
        )
      : undefined;
  }

  static async start(
    endpoint: string,
    tables: { name: string; arn: string; ttlAttribute?: string; warm?: Map<string, WarmRates> }[],
    options: StrictOptions = {},
  ): Promise<StrictDynamoDb> {
    const backend = new Backend(endpoint);
    const schemas = await Promise.all(tables.map((t) => describeTable(backend, t)));
    const warm = new Map(tables.flatMap((t) => [...(t.warm ?? [])]));
    const strict = new StrictDynamoDb(backend, schemas, options, warm);
    for (const s of schemas) await strict.adopt(s);
    strict.ttl?.start();
    return strict;
  }

  /**
   * Takes in a table: creates its index view and copies the items already there into it, and learns
   * their GSI partitions (the sim starts on empty tables; a gate over a kept database must not lose them).
   */
  private async adopt(schema: TableSchema): Promise<void> {
    const withView = this.lag !== undefined && schema.gsis.length > 0;
    if (withView) await this.lag!.createView(schema);
    let ExclusiveStartKey: Item | undefined;
    do {
      const page: { Items?: Item[]; LastEvaluatedKey?: Item } = await this.backend.call('Scan', {
        TableName: schema.name,
        ConsistentRead: true,
        ...(ExclusiveStartKey ? { ExclusiveStartKey } : {}),
      });
      for (const item of page.Items ?? []) {
        this.tracker.seed(schema, item);
        if (withView)
          await this.backend.call('PutItem', { TableName: IndexLag.viewOf(schema.name), Item: item });
      }
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
  }

  /** A gated table's key schema (IAM's dynamodb:LeadingKeys needs its partition key). */
  schemaOf(table: string): TableSchema | undefined {
    return this.schemas.get(table);
  }

  /** One sweep for expired items now (tests; the sweeper also runs on its own timer). */
  sweepTtl(): Promise<void> {
    return this.ttl?.sweep() ?? Promise.resolve();
  }

  async handle(
    operation: string,
    body: Json,
    raw: Buffer,
    method: string,
    path: string,
    headers: IncomingHttpHeaders,
  ): Promise<BackendAnswer> {
    const forward = (payload: Buffer | Json) =>
      this.backend.send(
        method,
        path,
        headers,
        Buffer.isBuffer(payload) ? payload : Buffer.from(JSON.stringify(payload)),
      );
    switch (operation) {
      case 'PutItem':
      case 'UpdateItem':
      case 'DeleteItem':
        return this.writes.singleWrite(operation, body, raw, forward);
      case 'BatchWriteItem':
        return this.writes.batchWrite(body, forward);
      case 'TransactWriteItems':
        return this.writes.transactWrite(body, raw, forward);
      case 'GetItem':
      case 'Query':
      case 'Scan':
        return this.reads.read(operation, body, raw, forward);
      case 'BatchGetItem':
        return this.reads.batchGet(body, forward);
      case 'TransactGetItems':
        return this.reads.transactGet(body, raw, forward);
      case 'ListTables': {
        const out = await forward(raw);
        if (!this.lag || out.status !== 200) return out;
        const parsed = JSON.parse(out.body.toString('utf8')) as { TableNames?: string[] };
        parsed.TableNames = parsed.TableNames?.filter((n) => !n.endsWith(INDEX_VIEW_SUFFIX));
        return rewritten(out, parsed);
      }
      default:
        return forward(raw);
    }
  }

  stats() {
    return {
      throttled: this.throttle.stats(),
      indexLag: this.lag ? { enabled: true, ...this.lag.stats() } : { enabled: false },
      ttl: this.ttl ? { enabled: true, ...this.ttl.stats() } : { enabled: false },
    };
  }

  /** Once the gate takes no more requests: lets the sweep and the copies under way end, then drops the backend. */
  async close(): Promise<void> {
    await this.ttl?.close();
    await this.tracker.settled();
    await this.lag?.close();
    this.backend.close();
  }
}
