/** The `leasehold sim` flags of the DynamoDB gate's strictness. */
import { describe, expect, it } from 'vitest';
import { indexLagFlag, throttleScaleFlag, ttlDelayFlag } from '../tools/sim/dynamodb/strict-flags.js';

describe('sim DynamoDB flags', () => {
  it('--index-lag MIN-MAX, N, or 0 for none', () => {
    expect(indexLagFlag('50-500')).toEqual({ minMs: 50, maxMs: 500 });
    expect(indexLagFlag('200')).toEqual({ minMs: 200, maxMs: 200 });
    expect(indexLagFlag('0')).toBe(false);
    expect(() => indexLagFlag('500-50')).toThrow(/below/);
    expect(() => indexLagFlag('fast')).toThrow(/MIN-MAX/);
  });

  it('--throttle-scale X (0: off) and --ttl-delay MS (0: prompt, off: never)', () => {
    expect(throttleScaleFlag('0.01')).toBe(0.01);
    expect(throttleScaleFlag('0')).toBe(0);
    expect(() => throttleScaleFlag('-1')).toThrow();
    expect(ttlDelayFlag('0')).toEqual({ maxDelayMs: 0, sweepEveryMs: 1_000 });
    expect(ttlDelayFlag('300000')).toEqual({ maxDelayMs: 300_000, sweepEveryMs: 10_000 });
    expect(ttlDelayFlag('off')).toBe(false);
    expect(() => ttlDelayFlag('soon')).toThrow();
  });
});
