/**
 * Index lag for the fault proxy: DynamoDB's global secondary indexes are eventually consistent (an
 * index read may show an item as it was up to a second or more ago, or miss an item just written);
 * dynalite's never lag. This keeps a second dynalite, the replica, whose items trail the primary's:
 *
 * - after every write the proxy forwarded (PutItem, UpdateItem, DeleteItem, BatchWriteItem,
 *   TransactWriteItems; unless DynamoDB refused it with a 4xx, which applies nothing), the item is
 *   read back from the primary (GetItem, ConsistentRead), and that image is written to the replica
 *   (PutItem, or DeleteItem when the item is gone) after a delay drawn at random in [0, maxLagMs];
 * - per item, read-backs run one after another and the replica applies the images in the order they
 *   were read, never earlier than an image before them: an item's index entry moves through the
 *   same states as the primary's, each one late (the way a GSI's propagation works);
 * - index reads (Query or Scan with an IndexName) are answered by the replica, so ordering, Limit,
 *   ExclusiveStartKey, ScanIndexForward, key conditions and projections are DynamoDB's own
 *   (dynalite's) on the lagging items; base-table reads and all writes go to the primary, exact.
 *
 * So an index query can show a head another worker claimed a moment ago (stale head), a task that
 * finished a moment ago (stale sweep entry), or miss a task just enqueued, requeued or claimed.
 *
 * Every write to the primary must pass through the proxy (the harness enqueues through the proxy's
 * fault-free endpoint), or the replica never hears of it. The replica's table must exist beforehand.
 */
import {
  DeleteItemCommand,
  DescribeTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';

type Key = Record<string, AttributeValue>;

export interface IndexLagOptions {
  /** The primary dynalite (the proxy's target). */
  primary: string;
  /** The replica dynalite: same tables, empty at the start, written by nobody else. */
  replica: string;
  /** Each write reaches the index views after a delay in [0, maxLagMs]. */
  maxLagMs: number;
  /** Draws the delays (default Math.random); `() => 1` makes every delay maxLagMs. */
  random?: () => number;
}

export interface IndexLagStats {
  /** Item images read back after writes. */
  readBacks: number;
  /** Images applied to the replica. */
  applied: number;
  /** Index reads answered by the replica. */
  indexReads: number;
  /** Index reads made while at least one item's index view was behind the table. */
  indexReadsWhileBehind: number;
  /** Most items behind at one index read. */
  maxItemsBehind: number;
  /** Read-backs or applies that failed and were tried again (never given up: the replica would miss a state). */
  retries: number;
}

interface ItemState {
  /** A read-back is waiting to start (a later write needs no read-back of its own). */
  readQueued: boolean;
  /** Read-backs of this item, one after another. */
  reads: Promise<void>;
  /** Applies to the replica, one after another, in read order. */
  applies: Promise<void>;
  /** When the last image read becomes visible; a later image is never visible before it. */
  visibleAt: number;
  /** Images read but not yet applied. */
  pending: number;
}

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);

export class IndexLag {
  readonly stats: IndexLagStats = {
    readBacks: 0,
    applied: 0,
    indexReads: 0,
    indexReadsWhileBehind: 0,
    maxItemsBehind: 0,
    retries: 0,
  };
  private readonly primary: DynamoDBClient;
  private readonly replica: DynamoDBClient;
  private readonly random: () => number;
  private readonly items = new Map<string, ItemState>();
  private readonly keySchemas = new Map<string, Promise<string[]>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private behind = 0;
  private closed = false;
  /**
   * Requests sent and not yet answered. close() waits for them: dynalite finishes a request it has
   * received even when its client is gone, and one that reaches its database after the harness closed
   * it throws "Database is closed" out of dynalite's callback, which ends the process (a chaos run
   * in CI crashed so).
   */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly options: IndexLagOptions) {
    const client = (endpoint: string) =>
      new DynamoDBClient({
        endpoint,
        region: 'local',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
        maxAttempts: 5,
      });
    this.primary = client(options.primary);
    this.replica = client(options.replica);
    this.random = options.random ?? Math.random;
  }

  /** True for the reads the replica answers: Query and Scan on an index. */
  static isIndexRead(op: string, body: Buffer): boolean {
    if (op !== 'Query' && op !== 'Scan') return false;
    try {
      return typeof (JSON.parse(body.toString('utf8')) as { IndexName?: unknown }).IndexName === 'string';
    } catch {
      return false;
    }
  }

  static isWrite(op: string): boolean {
    return WRITES.has(op);
  }

  /** Counts an index read about to be answered by the replica. */
  noteIndexRead(): void {
    this.stats.indexReads++;
    if (this.behind > 0) this.stats.indexReadsWhileBehind++;
    this.stats.maxItemsBehind = Math.max(this.stats.maxItemsBehind, this.behind);
  }

  /**
   * A write went through to the primary (or may have: its answer was lost). Returns once the items it
   * touched are read back, so a caller that waits for it gives its answer after the read-back started
   * (the proxy does not wait: read-backs are serialized per item, which is all the order needs).
   */
  async noteWrite(op: string, body: Buffer): Promise<void> {
    if (this.closed) return;
    let request: Record<string, any>;
    try {
      request = JSON.parse(body.toString('utf8')) as Record<string, any>;
    } catch {
      return;
    }
    const touched: { table: string; key?: Key; item?: Key }[] = [];
    if (op === 'PutItem') touched.push({ table: request.TableName, item: request.Item });
    else if (op === 'UpdateItem' || op === 'DeleteItem')
      touched.push({ table: request.TableName, key: request.Key });
    else if (op === 'BatchWriteItem') {
      for (const [table, writes] of Object.entries(request.RequestItems ?? {}) as [string, any[]][]) {
        for (const w of writes)
          touched.push(
            w.PutRequest ? { table, item: w.PutRequest.Item } : { table, key: w.DeleteRequest?.Key },
          );
      }
    } else if (op === 'TransactWriteItems') {
      for (const t of request.TransactItems ?? []) {
        if (t.Put) touched.push({ table: t.Put.TableName, item: t.Put.Item });
        else if (t.Update) touched.push({ table: t.Update.TableName, key: t.Update.Key });
        else if (t.Delete) touched.push({ table: t.Delete.TableName, key: t.Delete.Key });
      }
    }
    await Promise.all(
      touched.map(async ({ table, key, item }) => {
        if (!table) return;
        const names = await this.keyNames(table);
        const k = key ?? (item ? Object.fromEntries(names.map((n) => [n, item[n]!])) : undefined);
        if (!k || names.some((n) => k[n] === undefined)) return;
        await this.readBack(table, k);
      }),
    );
  }

  /** Stops: pending applies are dropped; requests already sent are answered first. */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await Promise.allSettled([...this.inFlight]);
    this.primary.destroy();
    this.replica.destroy();
  }

  /** Sends through `client`, counted in flight until answered. */
  private send<T>(request: Promise<T>): Promise<T> {
    this.inFlight.add(request);
    void request.then(
      () => this.inFlight.delete(request),
      () => this.inFlight.delete(request),
    );
    return request;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.add(timer);
    });
  }

  private keyNames(table: string): Promise<string[]> {
    let names = this.keySchemas.get(table);
    if (!names) {
      names = this.send(this.primary.send(new DescribeTableCommand({ TableName: table }))).then((out) =>
        (out.Table?.KeySchema ?? []).map((k) => k.AttributeName!),
      );
      names.catch(() => this.keySchemas.delete(table));
      this.keySchemas.set(table, names);
    }
    return names;
  }

  private readBack(table: string, key: Key): Promise<void> {
    const id = `${table}\u0000${JSON.stringify(
      Object.keys(key)
        .sort()
        .map((name) => [name, key[name]]),
    )}`;
    let state = this.items.get(id);
    if (!state) {
      state = {
        readQueued: false,
        reads: Promise.resolve(),
        applies: Promise.resolve(),
        visibleAt: 0,
        pending: 0,
      };
      this.items.set(id, state);
    }
    const s = state;
    // A read-back still waiting to start will see this write too.
    if (s.readQueued) return s.reads;
    s.readQueued = true;
    s.reads = s.reads.then(async () => {
      s.readQueued = false;
      if (this.closed) return;
      // Retried until it succeeds: a state the replica never got would leave an index entry wrong for good.
      let image: Key | undefined;
      for (;;) {
        try {
          image = (
            await this.send(
              this.primary.send(new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true })),
            )
          ).Item;
          break;
        } catch {
          if (this.closed) return;
          this.stats.retries++;
          await this.sleep(20);
        }
      }
      this.stats.readBacks++;
      const visibleAt = Math.max(s.visibleAt, Date.now() + this.random() * this.options.maxLagMs);
      s.visibleAt = visibleAt;
      if (s.pending++ === 0) this.behind++;
      // Chained, so an item's images reach the replica in the order they were read, each at its time.
      s.applies = s.applies.then(async () => {
        const wait = visibleAt - Date.now();
        if (wait > 0) await this.sleep(wait);
        for (;;) {
          if (this.closed) return;
          try {
            if (image)
              await this.send(this.replica.send(new PutItemCommand({ TableName: table, Item: image })));
            else await this.send(this.replica.send(new DeleteItemCommand({ TableName: table, Key: key })));
            this.stats.applied++;
            break;
          } catch {
            this.stats.retries++;
            await this.sleep(20);
          }
        }
        if (--s.pending === 0) this.behind--;
      });
    });
    return s.reads;
  }
}
