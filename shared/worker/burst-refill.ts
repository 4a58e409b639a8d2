/**
 * A burst of due delayed tasks a worker takes straight from the delay partitions: while it lasts, a
 * worker out of offered entries reads the delay partitions again (at most once a poll interval) and
 * steals what is still due, rather than reading every ready partition, which the burst's tasks never
 * enter. The burst is over when a read finds nothing due, or the entries of the last read won nothing.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { describeError } from '../errors.js';
import type { ClaimState } from '../store/claim-state.js';
import type { DueTask } from '../store/delayed-reads.js';

export interface BurstRefillDeps {
  memory: ClaimState;
  /** Reads the delayed tasks due by `now`; absent, a burst ends when its offered entries do. */
  refillDue: ((now: number) => Promise<readonly DueTask[]>) | undefined;
  pollIntervalMs: number;
  random: () => number;
  logger: Pick<Logger, 'warn'>;
}

export class BurstRefill {
  /** Due tasks were offered and the burst may still have entries this worker could take. */
  inBurst = false;
  private refilledAt = Number.NEGATIVE_INFINITY;
  private wonSinceRefill = 0;

  constructor(private readonly deps: BurstRefillDeps) {}

  /** Due tasks were offered: a burst is under way (if there is a way to read more of it). */
  offered(): void {
    if (this.deps.refillDue) this.inBurst = true;
  }

  won(count: number): void {
    this.wonSinceRefill += count;
  }

  /** When the next refill may read (a poll interval after the last). */
  get nextReadAt(): number {
    return this.refilledAt + this.deps.pollIntervalMs;
  }

  /**
   * More of the burst, read from the delay partitions and offered as a steal: 'offered', 'wait' (read
   * less than a poll interval ago: no ready read meanwhile), or 'none' (the burst is over: back to the
   * ready partitions).
   */
  async refill(now: number): Promise<'offered' | 'wait' | 'none'> {
    if (now < this.nextReadAt) return 'wait';
    // The entries read last time won nothing (another priority, a type with a limit, all taken by
    // others): what is left is the promotion's.
    if (this.refilledAt !== Number.NEGATIVE_INFINITY && this.wonSinceRefill === 0) return this.over();
    this.refilledAt = now;
    this.wonSinceRefill = 0;
    let entries: readonly DueTask[] = [];
    try {
      entries = (await this.deps.refillDue?.(now)) ?? [];
    } catch (error) {
      // What is left of the burst is promoted by the timekeeper: this run reads the ready partitions.
      this.deps.logger.warn('reading more of the burst failed', { error: describeError(error) });
    }
    if (entries.length === 0) return this.over();
    this.deps.memory.offerDue(entries, this.deps.random, { steal: true });
    return 'offered';
  }

  /** The run returns: a later invocation starts with no burst. */
  reset(): void {
    this.inBurst = false;
    this.refilledAt = Number.NEGATIVE_INFINITY;
    this.wonSinceRefill = 0;
  }

  private over(): 'none' {
    this.inBurst = false;
    return 'none';
  }
}
