/**
 * A process's outcome counters and their flush. The store makes one per lifecycle stream: it counts
 * what the stream says ended (outcome-counter.ts) and, when flushed, writes one UpdateItem per owner
 * and minute touched (outcome-store.ts). Whoever ends tasks flushes: the worker every metrics interval
 * and when its run returns (before Lambda freezes the process), recovery after each sweep, the API
 * after a cancel. A write that fails keeps its counts for the next flush; a flush never throws, so it
 * cannot break the lease path, and it tells its caller what it kept or dropped, to be logged.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { forEachBounded } from '../bounded-work.js';
import { describeError } from '../errors.js';
import type { StoreContext } from '../store/context.js';
import { uncounted } from '../store/cost-meter.js';
import { OutcomeCounter, total } from './outcome-counter.js';
import { addOutcomes, OUTCOME_RETENTION_MS, writePieces } from './outcome-store.js';

/** Writes one flush sends at once (owners times minutes touched since the last flush; mostly one or two). */
const PARALLEL_WRITES = 16;

export interface OutcomeFlush {
  /** UpdateItems that applied. */
  written: number;
  /** Counts whose write failed, kept for the next flush. */
  kept: number;
  /** Counts of minutes older than the items' retention (never flushed in time): not written. */
  dropped: number;
  /** Why writes failed (the first few). */
  errors: string[];
}

export class OutcomeRecorder {
  readonly counter: OutcomeCounter;
  /** The flush in flight: the next waits for it, so counts a failed write put back are not raced. */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly ctx: StoreContext) {
    this.counter = new OutcomeCounter(ctx.clock);
    this.counter.listen(ctx.events);
  }

  /** Writes what was counted since the last flush; nothing (no request) when nothing was. */
  flush(): Promise<OutcomeFlush> {
    const run = this.tail.then(() => uncounted(() => this.writePending()));
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async writePending(): Promise<OutcomeFlush> {
    const { batches, dropped } = this.counter.drain(this.ctx.clock.now() - OUTCOME_RETENTION_MS);
    const pieces = batches.flatMap(writePieces);
    const report: OutcomeFlush = { written: 0, kept: 0, dropped, errors: [] };
    await forEachBounded(pieces.length, PARALLEL_WRITES, async (i) => {
      const piece = pieces[i]!;
      try {
        await addOutcomes(this.ctx, piece);
        report.written++;
      } catch (error) {
        this.counter.restore(piece);
        report.kept += total(piece);
        if (report.errors.length < 5) report.errors.push(describeError(error));
      }
    });
    return report;
  }
}

/** Logs a flush that kept or dropped counts (a flush that wrote everything says nothing). */
export function logOutcomeFlush(logger: Pick<Logger, 'warn'>, flush: OutcomeFlush): void {
  if (flush.kept > 0)
    logger.warn('writing the outcome counters failed; the counts are kept for the next flush', {
      kept: flush.kept,
      errors: flush.errors,
    });
  if (flush.dropped > 0)
    logger.warn('outcome counts older than their retention were not written', { dropped: flush.dropped });
}
