/**
 * Timers the worker can account for. Lambda freezes the process after a handler returns, and a timer
 * left armed fires inside a later invocation; so every timer goes through here and `clearAll()` runs
 * before return. `armed` is what tests check.
 *
 * Node fires a timer whose delay exceeds 2^31-1 ms (about 24.8 days) after 1 ms instead, with only a
 * warning. A retry promotion due in 34 days then fired at once, found the task not due, re-armed and
 * fired again: a loop of writes. So a long delay is waited out in steps of at
 * most MAX_TIMER_DELAY_MS, and the callback runs once, after the whole delay.
 */

/** Node's largest timer delay; anything longer fires after 1 ms. */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** The platform's timers; injectable so the stepping of long delays is testable without waiting days. */
export interface TimerHost {
  setTimeout(fn: () => void, ms: number): unknown;
  setInterval(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const nodeTimers: TimerHost = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** A timer armed through a TimerSet; stays valid across the steps of a long delay. */
export type TimerHandle = { readonly __timer: true };

export class TimerSet {
  /** Each live timer and the platform handle of its current step. */
  private readonly handles = new Map<TimerHandle, unknown>();

  constructor(private readonly host: TimerHost = nodeTimers) {}

  get armed(): number {
    return this.handles.size;
  }

  timeout(fn: () => void, ms: number): TimerHandle {
    const timer = {} as TimerHandle;
    const arm = (left: number) => {
      const step = Math.min(left, MAX_TIMER_DELAY_MS);
      this.handles.set(
        timer,
        this.host.setTimeout(() => {
          if (left > step) return arm(left - step);
          this.handles.delete(timer);
          fn();
        }, step),
      );
    };
    // NaN and negative delays mean "now", as they do for setTimeout; Infinity waits until cleared.
    arm(Number.isNaN(ms) ? 0 : Math.max(0, ms));
    return timer;
  }

  /**
   * A repeating timer. A period over Node's limit would fire every millisecond; it is held at the
   * limit instead (the configuration keeps every period the worker uses far below it).
   */
  interval(fn: () => void, ms: number): TimerHandle {
    const timer = {} as TimerHandle;
    this.handles.set(timer, this.host.setInterval(fn, Math.min(ms, MAX_TIMER_DELAY_MS)));
    return timer;
  }

  clear(timer: TimerHandle | undefined): void {
    if (!timer) return;
    const handle = this.handles.get(timer);
    if (handle !== undefined) this.host.clearTimeout(handle);
    this.handles.delete(timer);
  }

  /** A promise that resolves after `ms`, or at once when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const onAbort = () => {
        this.clear(timer);
        resolve();
      };
      const timer = this.timeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  clearAll(): void {
    for (const handle of this.handles.values()) this.host.clearTimeout(handle);
    this.handles.clear();
  }
}
