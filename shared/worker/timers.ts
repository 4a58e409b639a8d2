/**
 * Timers the worker can account for. Lambda freezes the process after a handler returns, and a timer
 * left armed fires inside a later invocation; so every timer goes through here and `clearAll()` runs
 * before return. `armed` is what tests check.
 */
export class TimerSet {
  private readonly handles = new Set<NodeJS.Timeout>();

  get armed(): number {
    return this.handles.size;
  }

  timeout(fn: () => void, ms: number): NodeJS.Timeout {
    const handle = setTimeout(() => {
      this.handles.delete(handle);
      fn();
    }, ms);
    this.handles.add(handle);
    return handle;
  }

  interval(fn: () => void, ms: number): NodeJS.Timeout {
    const handle = setInterval(fn, ms);
    this.handles.add(handle);
    return handle;
  }

  clear(handle: NodeJS.Timeout | undefined): void {
    if (!handle) return;
    clearTimeout(handle);
    this.handles.delete(handle);
  }

  /** A promise that resolves after `ms`, or at once when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const onAbort = () => {
        this.clear(handle);
        resolve();
      };
      const handle = this.timeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  clearAll(): void {
    for (const handle of this.handles) clearTimeout(handle);
    this.handles.clear();
  }
}
