import { describe, expect, it } from 'vitest';
import { defineConfig, MAX_DURATION_MS } from '../shared/config.js';
import {
  decideFailure,
  decideRecovery,
  leaseExpiry,
  recoveryCutoff,
  retryDelayMs,
  leaseIsFree,
  sweepKeyAfterRenewal,
  sweepKeyFor,
  sweepQueryBound,
  sweepSlackMs,
} from '../shared/lease-rules.js';

const config = defineConfig(); // lease 60 s, heartbeat 10 s, skew 5 s
const T0 = 1_800_000_000_000;

describe('lease rules (pure, fixed clock)', () => {
  it('a lease runs for the lease timeout', () => {
    expect(leaseExpiry(T0, config)).toBe(T0 + 60_000);
  });

  it('recovery treats a lease as expired only past the skew margin', () => {
    expect(recoveryCutoff(T0, config)).toBe(T0 - 5_000);
    const task = { status: 'RUNNING' as const, attempts: 1, maxAttempts: 3, leaseOwner: 'w' };
    expect(decideRecovery({ ...task, leaseUntil: T0 - 5_000 }, T0, config)).toEqual({
      action: 'skip',
      reason: 'lease-valid',
    });
    expect(decideRecovery({ ...task, leaseUntil: T0 - 5_001 }, T0, config)).toEqual({ action: 'requeue' });
  });

  it('follows the recovery state machine', () => {
    const expired = { leaseUntil: T0 - 60_000, leaseOwner: 'w' };
    expect(
      decideRecovery({ ...expired, status: 'CANCEL_REQUESTED', attempts: 3, maxAttempts: 3 }, T0, config),
    ).toEqual({ action: 'cancel' });
    expect(
      decideRecovery({ ...expired, status: 'RUNNING', attempts: 2, maxAttempts: 3 }, T0, config),
    ).toEqual({ action: 'requeue' });
    expect(
      decideRecovery({ ...expired, status: 'RUNNING', attempts: 3, maxAttempts: 3 }, T0, config),
    ).toMatchObject({ action: 'fail', error: expect.stringContaining('attempt 3 of 3') });
    expect(decideRecovery({ ...expired, status: 'QUEUED', attempts: 1, maxAttempts: 3 }, T0, config)).toEqual(
      { action: 'skip', reason: 'not-leased' },
    );
    expect(
      decideRecovery({ ...expired, status: 'SUCCESS', attempts: 1, maxAttempts: 3 }, T0, config),
    ).toEqual({ action: 'skip', reason: 'not-leased' });
  });

  it('the sweep key runs ahead of the lease by the slack, and a renewal moves it only when it outruns it', () => {
    expect(sweepSlackMs(config)).toBe(45_000);
    const claimedAt = T0;
    const key = sweepKeyFor(leaseExpiry(claimedAt, config), config);
    expect(key).toBe(T0 + 105_000);
    const moves = [1, 2, 3, 4, 5, 6].map((n) =>
      sweepKeyAfterRenewal(key, leaseExpiry(claimedAt + n * 10_000, config), config),
    );
    expect(moves).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      T0 + 50_000 + 60_000 + 45_000,
      T0 + 60_000 + 60_000 + 45_000,
    ]);
  });

  it('recovery reads every expired lease and no lease renewed on schedule', () => {
    // A holder that died right after its key moved: leaseUntil = L, key = L + slack.
    const leaseUntil = T0 + 60_000;
    const key = sweepKeyFor(leaseUntil, config);
    const firstExpiredInstant = leaseUntil + config.clockSkewMs + 1;
    expect(key).toBeLessThanOrEqual(sweepQueryBound(firstExpiredInstant, config));
    // A live holder renewed one heartbeat ago: its key is beyond the bound.
    const now = T0 + 500_000;
    const renewedAt = now - config.heartbeatIntervalMs + 1;
    expect(sweepKeyFor(leaseExpiry(renewedAt, config), config)).toBeGreaterThan(sweepQueryBound(now, config));
  });

  it('backs off exponentially with equal jitter, capped', () => {
    const policy = { baseMs: 1_000, maxMs: 10_000 };
    expect([1, 2, 3, 4, 5].map((a) => retryDelayMs(a, policy, () => 0))).toEqual([
      500, 1_000, 2_000, 4_000, 5_000,
    ]);
    expect([1, 2, 3, 4, 5].map((a) => retryDelayMs(a, policy, () => 0.999999))).toEqual([
      1_000, 2_000, 4_000, 8_000, 10_000,
    ]);
  });

  it('never backs off longer than 7 days, whatever policy a caller passes (a longer timer fires at once)', () => {
    const sixtyDays = 60 * 86_400_000;
    expect(retryDelayMs(1, { baseMs: sixtyDays, maxMs: sixtyDays }, () => 0.999999)).toBeLessThanOrEqual(
      MAX_DURATION_MS,
    );
    expect(
      retryDelayMs(40, { baseMs: 1_000, maxMs: Number.MAX_SAFE_INTEGER }, () => 0.999999),
    ).toBeLessThanOrEqual(MAX_DURATION_MS);
    expect(
      decideFailure(
        { attempts: 1, maxAttempts: 3 },
        T0,
        true,
        { baseMs: sixtyDays, maxMs: sixtyDays },
        () => 1,
      ),
    ).toEqual({ status: 'QUEUED', availableAt: T0 + MAX_DURATION_MS });
    expect(MAX_DURATION_MS).toBeLessThan(2 ** 31 - 1);
  });

  it('retries while attempts remain and the error is retryable', () => {
    const policy = { baseMs: 1_000, maxMs: 10_000 };
    expect(decideFailure({ attempts: 1, maxAttempts: 3 }, T0, true, policy, () => 0.5)).toEqual({
      status: 'QUEUED',
      availableAt: T0 + 750,
    });
    expect(decideFailure({ attempts: 3, maxAttempts: 3 }, T0, true, policy, () => 0.5)).toEqual({
      status: 'FAILED',
    });
    expect(decideFailure({ attempts: 1, maxAttempts: 3 }, T0, false, policy, () => 0.5)).toEqual({
      status: 'FAILED',
    });
  });

  it('a slot is free when unheld or expired past the skew margin', () => {
    expect(leaseIsFree(undefined, T0, config)).toBe(true);
    expect(leaseIsFree({}, T0, config)).toBe(true);
    expect(leaseIsFree({ holder: 'w', leaseUntil: T0 - 5_000 }, T0, config)).toBe(false);
    expect(leaseIsFree({ holder: 'w', leaseUntil: T0 - 5_001 }, T0, config)).toBe(true);
  });
});
