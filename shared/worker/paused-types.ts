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
import { readClaimControls, type ClaimControls } from '../store/type-controls.js';

/** Whether the cached pauses, read at `readAt`, are too old to use at `now`. */
export const pausesAreStale = (readAt: number | undefined, now: number, refreshMs: number): boolean =>
  readAt === undefined || now - readAt >= refreshMs || now < readAt;

export class PausedTypes {
  private controls: ClaimControls = { paused: new Set(), grouped: new Set() };
  private readAt: number | undefined;

  constructor(
    private readonly read: () => Promise<ClaimControls>,
    private readonly clock: Clock,
    private readonly refreshMs: number,
  ) {}

  /**
   * `types` less the paused ones, and those of them with grouped tasks. A failed read throws (the
   * caller's claim fails as a failed claim read does): a worker that cannot tell whether a type is
   * paused claims nothing rather than guess.
   */
  async claimable(types: readonly string[]): Promise<ClaimableTypes> {
    const now = this.clock.now();
    if (pausesAreStale(this.readAt, now, this.refreshMs)) {
      this.controls = await this.read();
      this.readAt = now;
    }
    const open = types.filter((type) => !this.controls.paused.has(type));
    return { types: open, grouped: open.filter((type) => this.controls.grouped.has(type)) };
  }
}

/** The types a worker may claim now, and which of them have grouped tasks. */
export interface ClaimableTypes {
  types: string[];
  grouped: string[];
}

/**
 * A worker's paused-type filter: its store's pauses (LeaseStore.claimControls), read at most once every
 * `refreshMs`. A store that keeps none (a test's fake) pauses nothing.
 */
export function pausesOf(
  store: Pick<LeaseStore, 'claimControls'>,
  clock: Clock,
  refreshMs: number,
): ((types: readonly string[]) => Promise<ClaimableTypes>) | undefined {
  if (!store.claimControls) return undefined;
  const gate = new PausedTypes(() => store.claimControls!(), clock, refreshMs);
  return (types) => gate.claimable(types);
}

/** The API kick's `claimable`: the pauses on a deployment's table, read at most once every `refreshMs`. */
export function claimableTypesOn(
  ctx: StoreContext,
  refreshMs: number,
): (types: readonly string[]) => Promise<string[]> {
  const gate = new PausedTypes(() => readClaimControls(ctx), ctx.clock, refreshMs);
  return async (types) => (await gate.claimable(types)).types;
}
