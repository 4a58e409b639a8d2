/**
 * GSI propagation lag. DynamoDB updates global secondary indexes asynchronously (usually well under
 * a second): a Query or Scan on a GSI can miss an item just written, list an item under its old index
 * key, or still list one just deleted. The emulators update their indexes synchronously, so the gate
 * keeps a copy of each table with GSIs (`<table>.index-view`, same keys and GSIs) that receives every
 * write's resulting item image only after a delay drawn per write, and sends GSI reads there. Per
 * item the copies are applied in write order (their due times never decrease), so the last write wins
 * and nothing is lost; copies of one item due together are coalesced into one.
 */
import { BackendError, type Backend } from './backend.js';
import type { Item } from './capacity-units.js';
import type { TableSchema } from './table-schemas.js';

export const INDEX_VIEW_SUFFIX = '.index-view';

export interface IndexLagOptions {
  minMs: number;
  maxMs: number;
}

interface Copy {
  table: string;
  key: Item;
  /** The item after the write; undefined when the write deleted it. */
  image: Item | undefined;
  writtenAt: number;
  due: number;
}

const RETRY_MS = 100;

export class IndexLag {
  /** Pending copies per item, in write order. */
  private readonly queues = new Map<string, Copy[]>();
  /** The due time of each item's last scheduled copy: later writes are never due before it. */
  private readonly lastDue = new Map<string, number>();
  private readonly busy = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private closed = false;
  private applied = 0;
  private coalesced = 0;
  private failures = 0;
  private maxAppliedLagMs = 0;

  constructor(
    private readonly backend: Backend,
    readonly options: IndexLagOptions,
    private readonly random: () => number = Math.random,
  ) {}

  static viewOf(table: string): string {
    return `${table}${INDEX_VIEW_SUFFIX}`;
  }

  /** Creates the index view of a table with GSIs: same keys, same GSIs (no LSIs: those reads stay on the table). */
  async createView(schema: TableSchema): Promise<void> {
    const d = schema.description;
    // A view left by an earlier run (a database kept on disk) is stale: start from the table again.
    await this.backend
      .call('DeleteTable', { TableName: IndexLag.viewOf(schema.name) })
      .catch((error: unknown) => {
        if (!(error instanceof BackendError && error.type === 'ResourceNotFoundException')) throw error;
      });
    await this.backend.call('CreateTable', {
      TableName: IndexLag.viewOf(schema.name),
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: d.KeySchema,
      AttributeDefinitions: d.AttributeDefinitions,
      GlobalSecondaryIndexes: (d.GlobalSecondaryIndexes ?? []).map((g) => ({
        IndexName: g.IndexName,
        KeySchema: g.KeySchema,
        Projection: g.Projection,
      })),
    });
  }

  /** A write to this item happened at writtenAt (ms) and left this image: it reaches the GSIs after the lag. */
  record(table: string, itemKey: string, key: Item, image: Item | undefined, writtenAt: number): void {
    if (this.closed) return;
    const id = `${table}\u0001${itemKey}`;
    const lag = this.options.minMs + this.random() * (this.options.maxMs - this.options.minMs);
    const due = Math.max(writtenAt + lag, this.lastDue.get(id) ?? 0);
    this.lastDue.set(id, due);
    const queue = this.queues.get(id) ?? [];
    queue.push({ table, key, image, writtenAt, due });
    this.queues.set(id, queue);
    this.arm(due);
  }

  private arm(at: number): void {
    if (this.closed || at >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, at - Date.now()));
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    let next = Infinity;
    for (const [id, queue] of this.queues) {
      if (queue[0]!.due <= now) void this.drain(id);
      else next = Math.min(next, queue[0]!.due);
    }
    if (next < Infinity) this.arm(next);
  }

  /** Applies an item's due copies (the last of them: it carries the latest image), one apply at a time. */
  private async drain(id: string): Promise<void> {
    if (this.busy.has(id) || this.closed) return;
    const queue = this.queues.get(id);
    if (!queue) return;
    const now = Date.now();
    let n = 0;
    while (n < queue.length && queue[n]!.due <= now) n++;
    if (n === 0) return;
    const copy = queue[n - 1]!;
    this.busy.add(id);
    try {
      const TableName = IndexLag.viewOf(copy.table);
      if (copy.image) await this.backend.call('PutItem', { TableName, Item: copy.image });
      else await this.backend.call('DeleteItem', { TableName, Key: copy.key });
      queue.splice(0, n);
      this.applied++;
      this.coalesced += n - 1;
      this.maxAppliedLagMs = Math.max(this.maxAppliedLagMs, Date.now() - copy.writtenAt);
      if (queue.length === 0) {
        this.queues.delete(id);
        if (this.lastDue.get(id) === copy.due) this.lastDue.delete(id);
      } else this.arm(queue[0]!.due);
    } catch {
      // The emulator is busy or restarting: the copies stay queued, in order, and are tried again.
      this.failures++;
      this.arm(Date.now() + RETRY_MS);
    } finally {
      this.busy.delete(id);
    }
  }

  stats() {
    let pending = 0;
    let oldest = Infinity;
    for (const queue of this.queues.values()) {
      pending += queue.length;
      oldest = Math.min(oldest, queue[0]!.writtenAt);
    }
    return {
      minMs: this.options.minMs,
      maxMs: this.options.maxMs,
      pending,
      oldestPendingMs: pending ? Date.now() - oldest : 0,
      applied: this.applied,
      coalesced: this.coalesced,
      failures: this.failures,
      maxAppliedLagMs: Math.round(this.maxAppliedLagMs),
    };
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
