import type { Clock } from '../../shared/clock.js';

/** A clock that moves only when the test moves it. */
export class ManualClock implements Clock {
  constructor(private current = Date.UTC(2026, 10, 30, 9, 0, 0)) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
}

/** Deterministic ids: prefix-0001, prefix-0002, ... */
export function sequentialIds(prefix = 'id'): () => string {
  let n = 0;
  return () => `${prefix}-${String(++n).padStart(6, '0')}`;
}
