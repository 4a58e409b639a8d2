/**
 * The task item as the last write under each held lease returned it (a claim's or a renewal's ALL_NEW
 * answer), so the outcome write can price itself by the item's size without a read (recorded-cost.ts).
 * Entries leave with their lease's outcome; the oldest go first past a bound, so a lease that was lost
 * and never settled cannot make it grow without end.
 */
import type { TaskItem } from './task-item.js';

const MAX_HELD = 10_000;

export class HeldItems {
  private readonly items = new Map<string, TaskItem>();

  set(item: TaskItem): void {
    const key = keyOf(item.id, item.leaseToken);
    this.items.delete(key);
    this.items.set(key, item);
    if (this.items.size > MAX_HELD) this.items.delete(this.items.keys().next().value!);
  }

  /** The item as last written under this lease, left in place. */
  peek(taskId: string, token: number): TaskItem | undefined {
    return this.items.get(keyOf(taskId, token));
  }

  take(taskId: string, token: number): TaskItem | undefined {
    const key = keyOf(taskId, token);
    const item = this.items.get(key);
    this.items.delete(key);
    return item;
  }
}

const keyOf = (taskId: string, token: number) => `${taskId}#${token}`;
