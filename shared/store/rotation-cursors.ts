/**
 * Where a worker's visits of the rotations stand between its claim rounds (rotation-round.ts): per
 * rotation partition, the key past the last rotation it visited; and the rotations of other places it
 * left to them, with when it first saw each, so it takes them once they waited their turn.
 */

/** A rotation left to its place for now. */
export interface DeferredRotation {
  type: string;
  partition: string;
  rotation: string;
  firstSeenAt: number;
}

/** Deferred rotations a worker remembers; past this it remembers no more until some are taken. */
export const MAX_DEFERRED_ROTATIONS = 4_096;

export class RotationCursors {
  private readonly cursors = new Map<string, string>();
  private readonly deferred = new Map<string, DeferredRotation>();
  /** Rounds so far: which of the shards and the rotations goes first alternates with it. */
  private rounds = 0;

  get(partition: string): string | undefined {
    return this.cursors.get(partition);
  }

  set(partition: string, cursor: string | undefined): void {
    if (cursor === undefined) this.cursors.delete(partition);
    else this.cursors.set(partition, cursor);
  }

  /** Whether this round visits the rotations before the shards (every other round), so neither starves the other. */
  nextRoundFirst(): boolean {
    return this.rounds++ % 2 === 0;
  }

  /**
   * When this worker first left `rotation` to another place (now, if it had not). Full, it remembers
   * no new one: those it remembers keep their times, come due and are taken, and make room.
   */
  firstSeen(type: string, partition: string, rotation: string, now: number): number {
    const key = `${partition}\n${rotation}`;
    const seen = this.deferred.get(key);
    if (seen) return seen.firstSeenAt;
    if (this.deferred.size < MAX_DEFERRED_ROTATIONS)
      this.deferred.set(key, { type, partition, rotation, firstSeenAt: now });
    return now;
  }

  forget(partition: string, rotation: string): void {
    this.deferred.delete(`${partition}\n${rotation}`);
  }

  /** The rotations it left to others, oldest first. */
  deferredRotations(): DeferredRotation[] {
    return [...this.deferred.values()];
  }
}
