/**
 * GSI propagation lag. DynamoDB updates global secondary indexes asynchronously (usually well under
 * a second): a Query or Scan on a GSI can miss an item just written, list an item under its old index
 * key, or still list one just deleted. The emulators update their indexes synchronously, so the gate
 * keeps a copy of each table with GSIs (`<table>.index-view`, same keys and GSIs) that receives every
 * write's resulting item image only after a delay drawn per write, and sends GSI reads there. Per
 * item the copies are applied in write order (their due times never decrease), so the last write wins
 * and nothing is lost; copies of one item due together are coalesced into one.
 */
import { untilTableStatus } from '../../../shared/store/table-setup.js';
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

/** A min-heap of items by the time their next copy is due (or their retry). */
class DueHeap {
  private readonly heap: { at: number; id: string }[] = [];
  get size(): number {
    return this.heap.length;
  }
  peek(): number {
    return this.heap[0]?.at ?? Infinity;
  }
  push(at: number, id: string): void {
    const h = this.heap;
    h.push({ at, id });
    for (let i = h.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (h[parent]!.at <= h[i]!.at) break;
      [h[parent], h[i]] = [h[i]!, h[parent]!];
      i = parent;
    }
  }
  pop(): string {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const m = l + 1 < h.length && h[l + 1]!.at < h[l]!.at ? l + 1 : l;
        if (m >= h.length || h[i]!.at <= h[m]!.at) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top.id;
  }
}

export class IndexLag {
  /** Pending copies per item, in write order. */
  private readonly queues = new Map<string, Copy[]>();
  /** The due time of each item's last scheduled copy: later writes are never due before it. */
  private readonly lastDue = new Map<string, number>();
  private readonly busy = new Set<string>();
  /**
   * One entry per item with copies waiting and none being applied: when its first copy is due (or its
   * retry). An item being applied has none; the apply schedules its next copies when it ends.
   */
  private readonly due = new DueHeap();
  private readonly applying = new Set<Promise<void>>();
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
    const view = IndexLag.viewOf(schema.name);
    const status = async () =>
      (await this.backend.call<{ Table?: { TableStatus?: string } }>('DescribeTable', { TableName: view }))
        .Table?.TableStatus;
    // A view left by an earlier run (a database kept on disk) is stale: start from the table again.
    await this.backend.call('DeleteTable', { TableName: view }).catch((error: unknown) => {
      if (!(error instanceof BackendError && error.type === 'ResourceNotFoundException')) throw error;
    });
    await untilTableStatus(status, 'GONE', view);
    await this.backend.call('CreateTable', {
      TableName: view,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: d.KeySchema,
      // Only the view's key attributes: CreateTable refuses a definition no key schema uses (an LSI's).
      AttributeDefinitions: d.AttributeDefinitions.filter((a) =>
        [d.KeySchema, ...(d.GlobalSecondaryIndexes ?? []).map((g) => g.KeySchema)].some((keys) =>
          keys.some((k) => k.AttributeName === a.AttributeName),
        ),
      ),
      GlobalSecondaryIndexes: (d.GlobalSecondaryIndexes ?? []).map((g) => ({
        IndexName: g.IndexName,
        KeySchema: g.KeySchema,
        Projection: g.Projection,
      })),
    });
    // The adopted items are copied in next: a write before the view is ACTIVE is refused.
    await untilTableStatus(status, 'ACTIVE', view);
  }

  /** A write to this item happened at writtenAt (ms) and left this image: it reaches the GSIs after the lag. */
  record(table: string, itemKey: string, key: Item, image: Item | undefined, writtenAt: number): void {
    if (this.closed) return;
    const id = `${table}\u0001${itemKey}`;
    const lag = this.options.minMs + this.random() * (this.options.maxMs - this.options.minMs);
    const due = Math.max(writtenAt + lag, this.lastDue.get(id) ?? 0);
    this.lastDue.set(id, due);
    const queue = this.queues.get(id) ?? [];
    // A new queue gets its heap entry; an existing one has it, or its apply under way schedules it.
    if (queue.length === 0) this.schedule(id, due);
    queue.push({ table, key, image, writtenAt, due });
    this.queues.set(id, queue);
  }

  private schedule(id: string, at: number): void {
    this.due.push(at, id);
    this.arm(at);
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
    while (this.due.peek() <= now) {
      const applying = this.drain(this.due.pop());
      this.applying.add(applying);
      void applying.then(() => this.applying.delete(applying));
    }
    if (this.due.size > 0) this.arm(this.due.peek());
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
      } else this.schedule(id, queue[0]!.due);
    } catch {
      // The emulator is busy or restarting: the copies stay queued, in order, and are tried again.
      this.failures++;
      this.schedule(id, Date.now() + RETRY_MS);
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

  /** Stops applying copies; resolves once the ones under way are done. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.all([...this.applying]);
  }
}
