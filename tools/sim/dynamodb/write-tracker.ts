/**
 * Follows each item through the writes the gate lets through, so the index lag and the throughput
 * charges see every write's resulting image, in the order the writes took effect. The image comes
 * from the request when that is exact (a Put's item, a Delete's absence, an Update answered ALL_NEW);
 * when two writes to one item overlapped (their answers may arrive in either order) or an Update's
 * answer lacks it, it is read back with a consistent GetItem. The images of one item are taken one
 * after another, so a later one never reflects an older state than the one before it.
 */
import { indexEntry, type IndexEntry } from './index-entries.js';
import type { Backend } from './backend.js';
import { itemSize, type Item } from './capacity-units.js';
import { keyString, valueString, type TableSchema } from './table-schemas.js';

export type ImageSource = { kind: 'image'; image: Item } | { kind: 'absent' } | { kind: 'read' };

/** What the gate remembers of an item: enough to charge its next write and find its old GSI partitions. */
export interface KnownItem {
  size: number;
  /** The item's partition-key value in each GSI (schema.gsis order), undefined where it has none. */
  gsiPartitions: (string | undefined)[];
  /** The item's entry in each GSI (schema.gsis order), undefined where it has none: what a write changes there. */
  gsiEntries: (IndexEntry | undefined)[];
}

export type OnImage = (
  schema: TableSchema,
  key: Item,
  keyStr: string,
  image: Item | undefined,
  old: KnownItem | undefined,
  writtenAt: number,
  /** Capacity multiplier: 1 for a write, 2 in a transaction, 0 for a free TTL delete. */
  units: number,
) => void;

export class WriteTracker {
  private readonly items = new Map<string, KnownItem>();
  private readonly inflight = new Map<string, { n: number; contended: boolean }>();
  private readonly chains = new Map<string, Promise<void>>();
  failures = 0;

  constructor(
    private readonly backend: Backend,
    private readonly onImage: OnImage,
  ) {}

  known(schema: TableSchema, key: Item): KnownItem | undefined {
    return this.items.get(`${schema.name}\u0001${keyString(schema, key)}`);
  }

  /** An item already in the table when the gate started. */
  seed(schema: TableSchema, item: Item): void {
    this.items.set(`${schema.name}\u0001${keyString(schema, item)}`, this.describe(schema, item));
  }

  private describe(schema: TableSchema, image: Item): KnownItem {
    return {
      size: itemSize(image),
      gsiPartitions: schema.gsis.map((g) => (image[g.hashKey] ? valueString(image[g.hashKey]) : undefined)),
      gsiEntries: schema.gsis.map((g) => indexEntry(schema, g, image)),
    };
  }

  /** A write to this item starts; call what this returns once it is answered (source undefined: it changed nothing). */
  begin(schema: TableSchema, key: Item): (source: ImageSource | undefined, units: number) => void {
    const keyStr = keyString(schema, key);
    const id = `${schema.name}\u0001${keyStr}`;
    const state = this.inflight.get(id) ?? { n: 0, contended: false };
    if (state.n > 0) state.contended = true;
    state.n++;
    this.inflight.set(id, state);
    let ended = false;
    return (source, units) => {
      if (ended) return;
      ended = true;
      const writtenAt = Date.now();
      state.n--;
      const contended = state.contended;
      if (state.n === 0) this.inflight.delete(id);
      if (!source) return;
      const exact: ImageSource = contended ? { kind: 'read' } : source;
      const previous = this.chains.get(id) ?? Promise.resolve();
      const next = previous
        .then(async () => {
          const image =
            exact.kind === 'image'
              ? exact.image
              : exact.kind === 'absent'
                ? undefined
                : await this.read(schema, key);
          const old = this.items.get(id);
          if (image) this.items.set(id, this.describe(schema, image));
          else this.items.delete(id);
          this.onImage(schema, key, keyStr, image, old, writtenAt, units);
        })
        .catch(() => {
          this.failures++;
        });
      this.chains.set(id, next);
      void next.finally(() => {
        if (this.chains.get(id) === next) this.chains.delete(id);
      });
    };
  }

  /** The item as it is now, read consistently; retried, since losing it would lose a write from the GSIs. */
  private async read(schema: TableSchema, key: Item): Promise<Item | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        const out = await this.backend.call<{ Item?: Item }>('GetItem', {
          TableName: schema.name,
          Key: key,
          ConsistentRead: true,
        });
        return out.Item;
      } catch (error) {
        if (attempt >= 10) throw error;
        await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
  }

  /** Resolves once every image taken so far has been handed on (tests). */
  async settled(): Promise<void> {
    while (this.chains.size > 0) await Promise.all([...this.chains.values()]);
  }
}
