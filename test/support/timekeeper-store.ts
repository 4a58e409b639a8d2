/**
 * An in-memory Timekeeping store for the timekeeper's tests: delayed tasks by due time, with the
 * DynamoDB store's rule for a promotion (it applies only while the task is still delayed and due by
 * the clock). It records every read and every promotion with the clock's time, and can fail reads or
 * hold promotions in flight.
 */
import type { Clock } from '../../shared/clock.js';
import type { DueTask } from '../../shared/store/delayed-reads.js';
import type { Timekeeping } from '../../shared/store/ports.js';

interface Waiting {
  dueAt: number;
  state: 'delayed' | 'queued' | 'claimed';
}

export class FakeTimekeepingStore implements Timekeeping {
  private readonly tasks = new Map<string, Waiting>();
  /** When each dueDelayed read was made, and what it asked for. */
  readonly reads: { at: number; before: number; limit: number }[] = [];
  /** Promotions that applied, in order, with the clock's time. */
  readonly promotions: { id: string; at: number }[] = [];
  /** Every promote call, applied or not. */
  readonly promoteCalls: { id: string; at: number }[] = [];
  /** Reads throw this while set. */
  readFault: Error | undefined;
  /** Reads wait for this before answering (a slow read). */
  readGate: Promise<void> | undefined;
  /**
   * Reads answer with what was delayed when they were sent, not when they answer: an eventually
   * consistent index that has not yet seen the promotions applied meanwhile.
   */
  answerAsOfSend = false;
  /** Promotions wait for this before applying (slow writes). */
  promoteGate: Promise<void> | undefined;
  /** Promotions in flight now, and the most there ever were at once. */
  inFlight = 0;
  maxInFlight = 0;

  constructor(private readonly clock: Clock) {}

  /** A task waiting in the delay partitions until `dueAt`. */
  delay(id: string, dueAt: number): void {
    this.tasks.set(id, { dueAt, state: 'delayed' });
  }

  /** A worker claimed it straight from its delay partition (claim.ts step 1b): no longer delayed. */
  claimDirectly(id: string): void {
    const task = this.tasks.get(id);
    if (task?.state === 'delayed') task.state = 'claimed';
  }

  state(id: string): Waiting['state'] | undefined {
    return this.tasks.get(id)?.state;
  }

  async dueDelayed(input: { before: number; limit: number }): Promise<DueTask[]> {
    this.reads.push({ at: this.clock.now(), ...input });
    const asSent = new Map([...this.tasks].map(([id, t]) => [id, { ...t }]));
    if (this.readGate) await this.readGate;
    if (this.readFault) throw this.readFault;
    return [...(this.answerAsOfSend ? asSent : this.tasks)]
      .filter(([, t]) => t.state === 'delayed' && t.dueAt <= input.before)
      .sort(([, a], [, b]) => a.dueAt - b.dueAt)
      .slice(0, input.limit)
      .map(([id, t]) => ({ id, dueAt: t.dueAt }));
  }

  async promote(input: { id: string }): Promise<boolean> {
    this.promoteCalls.push({ id: input.id, at: this.clock.now() });
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.promoteGate) await this.promoteGate;
      const task = this.tasks.get(input.id);
      const now = this.clock.now();
      if (!task || task.state !== 'delayed' || task.dueAt > now) return false;
      task.state = 'queued';
      this.promotions.push({ id: input.id, at: now });
      return true;
    } finally {
      this.inFlight--;
    }
  }
}
