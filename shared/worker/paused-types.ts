/**
 * Which types a worker may claim, with the operators' pauses (store/type-controls.ts) taken out. The
 * controls are read at most once a refresh interval (the poll interval) and only when the worker is
 * about to claim, so a pause costs one small Query per worker per poll interval, never one per task, and
 * an idle worker that does not claim reads nothing. Every round a worker begins after its first read
 * following the pause (within one refresh interval) leaves the type out; a round already under way
 * finishes as it began.
 */
import type { Clock } from '../clock.js';
import type { StoreContext } from '../store/context.js';
import type { LeaseStore } from '../store/ports.js';
import { readPausedTypes } from '../store/type-controls.js';

/** Whether the cached pauses, read at `readAt`, are too old to use at `now`. */
export const pausesAreStale = (readAt: number | undefined, now: number, refreshMs: number): boolean =>
  readAt === undefined || now - readAt >= refreshMs || now < readAt;

export class PausedTypes {
  private paused = new Set<string>();
  private readAt: number | undefined;

  constructor(
    private readonly read: () => Promise<Set<string>>,
    private readonly clock: Clock,
    private readonly refreshMs: number,
  ) {}

  /**
   * `types` less the paused ones. A failed read throws (the caller's claim fails as a failed claim read
   * does): a worker that cannot tell whether a type is paused claims nothing rather than guess.
   */
  async claimable(types: readonly string[]): Promise<string[]> {
    const now = this.clock.now();
    if (pausesAreStale(this.readAt, now, this.refreshMs)) {
      this.paused = await this.read();
      this.readAt = now;
    }
    return types.filter((type) => !this.paused.has(type));
  }
}

/**
 * A worker's paused-type filter: its store's pauses (LeaseStore.pausedTypes), read at most once every
 * `refreshMs`. A store that keeps none (a test's fake) pauses nothing.
 */
export function pausesOf(
  store: Pick<LeaseStore, 'pausedTypes'>,
  clock: Clock,
  refreshMs: number,
): ((types: readonly string[]) => Promise<string[]>) | undefined {
  if (!store.pausedTypes) return undefined;
  const gate = new PausedTypes(() => store.pausedTypes!(), clock, refreshMs);
  return (types) => gate.claimable(types);
}

/** The API kick's `claimable`: the pauses on a deployment's table, read at most once every `refreshMs`. */
export function claimableTypesOn(
  ctx: StoreContext,
  refreshMs: number,
): (types: readonly string[]) => Promise<string[]> {
  const gate = new PausedTypes(() => readPausedTypes(ctx), ctx.clock, refreshMs);
  return (types) => gate.claimable(types);
}
