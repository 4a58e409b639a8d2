/** Vitest's fake timers and Date from a fixed instant, for the worker tests that run on production settings. */
import { afterEach, beforeEach, vi } from 'vitest';

/** 2026-12-01 09:00 UTC: every fake-time worker test starts here. */
export const START = Date.UTC(2026, 11, 1, 9, 0, 0);

/** Fakes timers and Date from START before each test of the calling file, and restores them after. */
export function useFakeTime(): void {
  beforeEach(() => {
    vi.useFakeTimers({
      now: START,
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
    });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}

/** Moves fake time on, running the timers and the promises they settle. */
export const advance = async (ms: number) => void (await vi.advanceTimersByTimeAsync(ms));
