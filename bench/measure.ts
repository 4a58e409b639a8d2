/** One figure of the benchmark, with its target and the parameters it was measured with. */
export interface Target {
  /** `<=`: at most `value`; `>=`: at least. */
  op: '<=' | '>=';
  value: number;
}

export interface Measure {
  /** Which of the benchmark's measures (1-8, docs/benchmark.md) this figure belongs to. */
  group: string;
  name: string;
  value: number;
  unit: string;
  target?: Target;
  /** Whether the value meets the target (absent: no target, reported for information). */
  met?: boolean;
  parameters: Record<string, unknown>;
  note?: string;
}

export interface BenchContext {
  /** dynalite's endpoint (a separate process). */
  endpoint: string;
  quick: boolean;
  log: (line: string) => void;
}

export function measure(m: Omit<Measure, 'met'>): Measure {
  if (!m.target) return m;
  const met = m.target.op === '<=' ? m.value <= m.target.value : m.value >= m.target.value;
  return { ...m, met };
}

export const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
