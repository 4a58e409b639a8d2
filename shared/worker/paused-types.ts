/**
 * Which types a worker may claim, with the operators' pauses (store/type-controls.ts) taken out. The
 * controls are read at most once a refresh interval (the poll interval) and only when the worker is
 * about to claim, so a pause costs one small Query per worker per poll interval, never one per task, and
 * an idle worker that does not claim reads nothing. A pause therefore takes effect within one refresh
 * interval; a claim round under way when it is written still finishes.
 */
import type { Clock } from '../clock.js';
import type { StoreContext } from '../store/context.js';
import { pausedTypesOf, readTypeControls } from '../store/type-controls.js';

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

/** The worker's `claimableTypes` on a deployment's table: its pauses, read at most once every `refreshMs`. */
export function claimableTypesOn(
  ctx: StoreContext,
  refreshMs: number,
): (types: readonly string[]) => Promise<string[]> {
  const gate = new PausedTypes(async () => pausedTypesOf(await readTypeControls(ctx)), ctx.clock, refreshMs);
  return (types) => gate.claimable(types);
}
