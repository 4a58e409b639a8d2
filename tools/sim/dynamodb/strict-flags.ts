/** The `leasehold sim` flags of the DynamoDB gate's strictness (see cli.ts), parsed into SimOptions fields. */
import type { IndexLagOptions } from './index-lag.js';
import type { TtlOptions } from './ttl-sweeper.js';

/** `--index-lag MIN-MAX` (ms, e.g. 50-500), `--index-lag N` (always N ms), `--index-lag 0` (off). */
export function indexLagFlag(value: string): IndexLagOptions | false {
  const m = /^(\d+)(?:-(\d+))?$/.exec(value.trim());
  if (!m) throw new Error(`--index-lag takes MIN-MAX milliseconds (e.g. 50-500) or 0, got "${value}"`);
  const minMs = Number(m[1]);
  const maxMs = m[2] === undefined ? minMs : Number(m[2]);
  if (maxMs < minMs) throw new Error(`--index-lag: ${maxMs} is below ${minMs}`);
  return maxMs === 0 ? false : { minMs, maxMs };
}

/** `--throttle-scale X`: DynamoDB's on-demand limits times X (0.01 for a laptop's rates); 0 turns throttling off. */
export function throttleScaleFlag(value: string): number {
  const scale = Number(value);
  if (!Number.isFinite(scale) || scale < 0)
    throw new Error(`--throttle-scale takes a number >= 0 (0: off), got "${value}"`);
  return scale;
}

/** `--ttl-delay MS`: expired items go within MS of expiry (0: at the next sweep, one a second); `off`: never. */
export function ttlDelayFlag(value: string): TtlOptions | false {
  if (value === 'off') return false;
  const maxDelayMs = Number(value);
  if (!Number.isInteger(maxDelayMs) || maxDelayMs < 0)
    throw new Error(`--ttl-delay takes milliseconds (0: prompt) or off, got "${value}"`);
  return {
    maxDelayMs,
    sweepEveryMs: maxDelayMs === 0 ? 1_000 : Math.min(10_000, Math.max(1_000, maxDelayMs / 10)),
  };
}
