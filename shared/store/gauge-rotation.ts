/**
 * How much of an idle type the minute's gauge reads. A type's ready tasks lie in its lane and sixteen
 * shards: 17 queries a minute per type, whether or not anything waits (with five types, 85 of the
 * recovery minute's 117 queries, and most of its Lambda time). A type the last sweep found with nothing
 * ready is looked at more cheaply: its lane and a rotating quarter of its shards. If any of those holds
 * a task, every shard is read in the same sweep; if none does, the type counts as empty, and the next
 * sweeps read the other quarters, so every shard is still read at least every fourth sweep.
 *
 * What it costs: a task whose kick was lost (the only ready task no worker was started for) is found
 * up to four sweeps after it was enqueued instead of one, when its type had nothing else waiting. A
 * type with work is read in full every sweep. A process that kept nothing (a new recovery environment)
 * reads every type in full.
 */
import { SHARD_COUNT } from '../table-layout.js';
import { TUNING } from '../tuning.js';

/** The shards sweep number `sweep` reads of an idle type: consecutive runs of `perSweep`, going round. */
export function rotatingShards(sweep: number, perSweep: number, shardCount: number = SHARD_COUNT): number[] {
  const share = Math.max(1, Math.min(shardCount, Math.floor(perSweep)));
  const turns = Math.ceil(shardCount / share);
  const from = (((sweep % turns) + turns) % turns) * share;
  return Array.from({ length: Math.min(share, shardCount - from) }, (_, i) => from + i);
}

/** What one process remembers between its sweeps: which types it last found empty, and how many sweeps it ran. */
export class GaugeRotation {
  private readonly emptyTypes = new Set<string>();
  private sweeps = 0;

  constructor(private readonly perSweep: number = TUNING.gauge.idleTypeShardsPerSweep) {}

  /** The shards to read first of `type` this sweep: undefined for all of them (the type had work, or is new here). */
  firstShards(type: string): number[] | undefined {
    return this.emptyTypes.has(type) ? rotatingShards(this.sweeps, this.perSweep) : undefined;
  }

  /** After a sweep: what it found ready of each type it measured. */
  noteSweep(byType: Readonly<Record<string, { ready: number }>>): void {
    for (const [type, { ready }] of Object.entries(byType)) {
      if (ready === 0) this.emptyTypes.add(type);
      else this.emptyTypes.delete(type);
    }
    this.sweeps++;
  }
}
