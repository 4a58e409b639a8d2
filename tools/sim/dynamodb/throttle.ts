/**
 * DynamoDB on-demand throughput limits as token buckets: per table and per GSI (a new on-demand table
 * sustains 4,000 write and 12,000 read units a second, or its warm throughput where the template sets
 * one), and per partition-key value of each (1,000 WCU and 3,000 RCU a second). A request is refused while a bucket it needs is empty (not below its
 * cost: like DynamoDB, the gate learns what a request consumed only after it ran), then charged what
 * it consumed, which may leave the bucket in debt. A bucket holds one second of its rate: DynamoDB's
 * burst capacity (unused capacity kept up to 300 s) is documented for provisioned tables and not
 * guaranteed on demand, so the sim gives none.
 */

import type { WarmRates } from './table-from-template.js';

export const ON_DEMAND_LIMITS = { tableWrite: 4000, tableRead: 12000, keyWrite: 1000, keyRead: 3000 };

/** One thing a request reads or writes: a table or a GSI, and the partition-key value when known. */
export interface Demand {
  kind: 'read' | 'write';
  table: string;
  /** Set for a GSI. */
  index?: string;
  /** The table's or index's ARN, for the throttling reason. */
  arn: string;
  /** The partition-key value (as valueString gives it), when the request names one. */
  partition?: string;
}

/** What DynamoDB reports in ThrottlingReasons; `label` is the sim's name for the statistics. */
export interface ThrottleReason {
  reason: string;
  resource: string;
  label: string;
}

class TokenBucket {
  private tokens: number;
  constructor(
    readonly rate: number,
    private last: number,
  ) {
    this.tokens = rate;
  }
  level(now: number): number {
    this.tokens = Math.min(this.rate, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    return this.tokens;
  }
  take(units: number, now: number): void {
    this.level(now);
    this.tokens -= units;
  }
}

/** Past this many buckets the full ones are dropped (a full bucket is what a new one would be). */
const PRUNE_ABOVE = 20_000;

const label = (d: Demand) => (d.index ? `${d.table}/index/${d.index}` : d.table);

export class Throttle {
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly byResource: Record<string, number> = {};
  private readonly byPartitionKey: Record<string, number> = {};
  private total = 0;
  /**
   * Capacity units consumed by resource (the table, `<table>/index/<name>`): which index a load wrote;
   * stats() sums them into what on-demand bills (sim:cost prices it).
   */
  private readonly consumedByResource: Record<string, { readUnits: number; writeUnits: number }> = {};
  /** The size that triggers the next pruning: twice what the last one kept, so kept buckets are not rescanned for every new key. */
  private pruneAbove = PRUNE_ABOVE;

  constructor(
    /** 1 is DynamoDB's limits; 0.01 makes them 40/120/10/30 a second. */
    readonly scale: number,
    private readonly now: () => number = Date.now,
    /**
     * Warm throughput by resource label (the table's name, `<table>/index/<name>`): what that table or
     * GSI sustains from the start instead of a new one's 4,000/12,000; scaled like the rest.
     */
    private readonly warm: ReadonlyMap<string, WarmRates> = new Map(),
  ) {}

  private bucket(name: string, rate: number): TokenBucket {
    let b = this.buckets.get(name);
    if (!b) {
      // One bucket per partition-key value ever seen: drop the full ones now and then.
      if (this.buckets.size > this.pruneAbove) {
        const now = this.now();
        for (const [k, old] of this.buckets) if (old.level(now) >= old.rate) this.buckets.delete(k);
        this.pruneAbove = Math.max(PRUNE_ABOVE, 2 * this.buckets.size);
      }
      b = new TokenBucket(rate, this.now());
      this.buckets.set(name, b);
    }
    return b;
  }

  private levels(d: Demand): { level: TokenBucket; partition?: TokenBucket } {
    const write = d.kind === 'write';
    const warm = this.warm.get(label(d));
    const whole = this.bucket(
      `${d.kind}|${label(d)}`,
      ((write ? warm?.write : warm?.read) ??
        (write ? ON_DEMAND_LIMITS.tableWrite : ON_DEMAND_LIMITS.tableRead)) * this.scale,
    );
    if (d.partition === undefined) return { level: whole };
    return {
      level: whole,
      partition: this.bucket(
        `${d.kind}|${label(d)}|${d.partition}`,
        (write ? ON_DEMAND_LIMITS.keyWrite : ON_DEMAND_LIMITS.keyRead) * this.scale,
      ),
    };
  }

  /**
   * The reason DynamoDB would throttle a request needing these, or undefined if it may run. For an
   * on-demand table, DynamoDB's ThrottlingReason documentation names KeyRangeThroughputExceeded for a
   * partition-key value over its partition's limit and AccountLimitExceeded for a table or GSI over
   * its per-table throughput (MaxOnDemandThroughputExceeded only when a table sets a maximum, which
   * Leasehold's does not): https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_ThrottlingReason.html
   */
  blocked(demands: Demand[]): ThrottleReason | undefined {
    if (this.scale <= 0) return undefined;
    const now = this.now();
    for (const d of demands) {
      const { level, partition } = this.levels(d);
      const prefix = `${d.index ? 'Index' : 'Table'}${d.kind === 'write' ? 'Write' : 'Read'}`;
      if (partition && partition.level(now) <= 0)
        return { reason: `${prefix}KeyRangeThroughputExceeded`, resource: d.arn, label: label(d) };
      if (level.level(now) <= 0)
        return { reason: `${prefix}AccountLimitExceeded`, resource: d.arn, label: label(d) };
    }
    return undefined;
  }

  /** blocked(), counting the refusal in the statistics. */
  refuse(demands: Demand[]): ThrottleReason | undefined {
    const reason = this.blocked(demands);
    if (reason) this.count(reason, demands);
    return reason;
  }

  /** Records a throttled request against the resource and partition key that refused it. */
  count(reason: ThrottleReason, demands: Demand[]): void {
    this.total++;
    this.byResource[reason.label] = (this.byResource[reason.label] ?? 0) + 1;
    const d = demands.find((x) => label(x) === reason.label && x.partition !== undefined);
    if (d && reason.reason.includes('KeyRange')) {
      const key = `${reason.label} ${d.partition}`;
      this.byPartitionKey[key] = (this.byPartitionKey[key] ?? 0) + 1;
    }
  }

  /** Charges what a request consumed. */
  charge(d: Demand, units: number): void {
    if (units > 0) {
      const field = d.kind === 'write' ? 'writeUnits' : 'readUnits';
      (this.consumedByResource[label(d)] ??= { readUnits: 0, writeUnits: 0 })[field] += units;
    }
    if (this.scale <= 0 || units <= 0) return;
    const now = this.now();
    const { level, partition } = this.levels(d);
    level.take(units, now);
    partition?.take(units, now);
  }

  stats() {
    return {
      scale: this.scale,
      limitsPerSecond: Object.fromEntries(
        Object.entries(ON_DEMAND_LIMITS).map(([k, v]) => [k, v * this.scale]),
      ) as Record<keyof typeof ON_DEMAND_LIMITS, number>,
      total: this.total,
      consumed: Object.values(this.consumedByResource).reduce(
        (sum, c) => ({ readUnits: sum.readUnits + c.readUnits, writeUnits: sum.writeUnits + c.writeUnits }),
        { readUnits: 0, writeUnits: 0 },
      ),
      consumedByResource: structuredClone(this.consumedByResource),
      byResource: { ...this.byResource },
      byPartitionKey: { ...this.byPartitionKey },
    };
  }
}
