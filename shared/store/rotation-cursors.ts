/** Where a worker's visits of the rotations stand between its claim rounds (rotation-round.ts). */
/** Each worker's cursors across rounds: per rotation partition, the key past the last rotation it visited. */
export class RotationCursors {
  private readonly cursors = new Map<string, string>();
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
}
