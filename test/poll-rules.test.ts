import { describe, expect, it } from 'vitest';
import {
  EXPECTED_WORK_POLL_MS,
  EXPECTED_WORK_WINDOW_MS,
  expectingWork,
  pollWait,
} from '../shared/worker/poll-rules.js';

const AT = 1_000_000;

describe('poll rules', () => {
  it('without an expected burst: the poll interval, and nothing keeps the run up', () => {
    expect(pollWait(1_000, undefined, AT)).toBe(1_000);
    expect(expectingWork(undefined, AT)).toBe(false);
  });

  it('before the burst: wait until just past its instant (never longer than a poll)', () => {
    expect(pollWait(1_000, AT, AT - 300)).toBe(305);
    expect(pollWait(1_000, AT, AT - 5_000)).toBe(1_000);
    expect(expectingWork(AT, AT - 5_000)).toBe(true);
  });

  it('within the window after it: look often; after the window: back to the poll, and free to stop', () => {
    expect(pollWait(1_000, AT, AT)).toBe(EXPECTED_WORK_POLL_MS);
    expect(pollWait(20, AT, AT + 10)).toBe(20);
    expect(expectingWork(AT, AT + EXPECTED_WORK_WINDOW_MS - 1)).toBe(true);
    expect(expectingWork(AT, AT + EXPECTED_WORK_WINDOW_MS)).toBe(false);
    expect(pollWait(1_000, AT, AT + EXPECTED_WORK_WINDOW_MS)).toBe(1_000);
  });
});
