/**
 * The worker's and recovery's figures. The runtime talks to this small interface; in Lambda it is
 * backed by Powertools Metrics (CloudWatch Embedded Metric Format), in tests by a recorder.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

export const COUNTERS = [
  'Claims',
  'WastedClaimWrites',
  'LeaseRenewals',
  'LeaseRenewalsOk',
  'LeasesLost',
  'TasksSucceeded',
  'TasksRetried',
  'TasksFailed',
  'TasksCancelled',
  'TasksReleased',
  'LateCompletionsRejected',
  'RecoveredRequeued',
  'RecoveredFailed',
  'RecoveredCancelled',
  'DelayedPromoted',
] as const;
export const TIMINGS = ['TaskDuration', 'QueueWait', 'EventLoopLag'] as const;
export const GAUGES = ['QueueDepth', 'ReadyTasks', 'RunningTasks', 'OldestDueAgeMs'] as const;
/** A running worker sends its figures this often: CloudWatch alarms evaluate one-minute periods. */
export const METRICS_FLUSH_INTERVAL_MS = 60_000;

export type CounterName = (typeof COUNTERS)[number];
export type TimingName = (typeof TIMINGS)[number];
export type GaugeName = (typeof GAUGES)[number];

export interface LeaseholdMetrics {
  count(name: CounterName, value?: number): void;
  timing(name: TimingName, ms: number): void;
  /** A level at this moment (queue depth), not a count of events. */
  gauge(name: GaugeName, value: number): void;
  /** Sends what was recorded (EMF: one log line). Called before a Lambda invocation returns. */
  flush(): void;
}

export function powertoolsMetrics(serviceName: string, namespace = 'Leasehold'): LeaseholdMetrics {
  const metrics = new Metrics({ namespace, serviceName });
  return {
    count: (name, value = 1) => metrics.addMetric(name, MetricUnit.Count, value),
    timing: (name, ms) => metrics.addMetric(name, MetricUnit.Milliseconds, ms),
    gauge: (name, value) => metrics.addMetric(name, MetricUnit.Count, value),
    flush: () => metrics.publishStoredMetrics(),
  };
}

const RECENT_TIMINGS = 1_000;

/** Keeps the figures in memory (counters in full, the latest timings): for tests and for the local stack's stats. */
export class RecordingMetrics implements LeaseholdMetrics {
  readonly counters = new Map<CounterName, number>();
  readonly timings = new Map<TimingName, number[]>();
  readonly gauges = new Map<GaugeName, number>();
  flushes = 0;

  count(name: CounterName, value = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + value);
  }
  /** Keeps the latest RECENT_TIMINGS samples per name: the local stack runs for days. */
  timing(name: TimingName, ms: number): void {
    const samples = this.timings.get(name) ?? [];
    samples.push(ms);
    if (samples.length > RECENT_TIMINGS) samples.splice(0, samples.length - RECENT_TIMINGS);
    this.timings.set(name, samples);
  }
  gauge(name: GaugeName, value: number): void {
    this.gauges.set(name, value);
  }
  flush(): void {
    this.flushes++;
  }
  get(name: CounterName): number {
    return this.counters.get(name) ?? 0;
  }
}
