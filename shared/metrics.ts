/**
 * The worker's and recovery's figures. The runtime talks to this small interface; in Lambda it is
 * backed by Powertools Metrics (CloudWatch Embedded Metric Format), in tests by a recorder.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { addCost, type TaskCost } from './store/task-cost.js';

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
/**
 * Gauges recovery also publishes per task type, under the TASK_TYPE_DIMENSION, beside the totals (which
 * keep the service dimension alone, so the alarms on them are unchanged). CloudWatch bills each
 * name-and-dimensions pair as one custom metric ($0.30 a month): two more per task type.
 */
export const TYPE_GAUGES = ['ReadyTasks', 'OldestDueAgeMs'] as const satisfies readonly GaugeName[];
export const TASK_TYPE_DIMENSION = 'TaskType';
/** A running worker sends its figures this often: CloudWatch alarms evaluate one-minute periods. */
export const METRICS_FLUSH_INTERVAL_MS = 60_000;

export type CounterName = (typeof COUNTERS)[number];
export type TimingName = (typeof TIMINGS)[number];
export type GaugeName = (typeof GAUGES)[number];
export type TypeGaugeName = (typeof TYPE_GAUGES)[number];

export interface LeaseholdMetrics {
  count(name: CounterName, value?: number): void;
  timing(name: TimingName, ms: number): void;
  /** A level at this moment (queue depth), not a count of events. */
  gauge(name: GaugeName, value: number): void;
  /** One task type's level, published with the TASK_TYPE_DIMENSION (a metric per type). */
  typeGauge(type: string, name: TypeGaugeName, value: number): void;
  /**
   * What a finished task cost (its `cost`, store/task-cost.ts): summed per type as COST_METRICS under
   * the TASK_TYPE_DIMENSION, with the owner as a property of the EMF document (Logs Insights sums it by
   * owner; as a dimension every owner would be three more billed metrics).
   */
  taskCost(type: string, owner: string, cost: TaskCost): void;
  /** Sends what was recorded (EMF: one log line). Called before a Lambda invocation returns. */
  flush(): void;
}

export function powertoolsMetrics(
  serviceName: string,
  // The deployment's namespace (the construct sets it per deployment), else Leasehold's.
  namespace = process.env.POWERTOOLS_METRICS_NAMESPACE || 'Leasehold',
): LeaseholdMetrics {
  const metrics = new Metrics({ namespace, serviceName });
  // An EMF document carries one set of dimension values, so each type's gauges go in one of their own,
  // and each type and owner's costs (the owner a property of its document).
  const perType = new Map<string, Metrics>();
  const perOwner = new Map<string, Metrics>();
  return {
    count: (name, value = 1) => metrics.addMetric(name, MetricUnit.Count, value),
    timing: (name, ms) => metrics.addMetric(name, MetricUnit.Milliseconds, ms),
    gauge: (name, value) => metrics.addMetric(name, MetricUnit.Count, value),
    typeGauge: (type, name, value) => {
      let typed = perType.get(type);
      if (!typed) {
        typed = new Metrics({ namespace, serviceName, defaultDimensions: { [TASK_TYPE_DIMENSION]: type } });
        perType.set(type, typed);
      }
      typed.addMetric(name, MetricUnit.Count, value);
    },
    taskCost: (type, owner, cost) => {
      const key = JSON.stringify([type, owner]);
      let typed = perOwner.get(key);
      if (!typed) {
        typed = new Metrics({ namespace, serviceName, defaultDimensions: { [TASK_TYPE_DIMENSION]: type } });
        typed.addMetadata('owner', owner);
        perOwner.set(key, typed);
      }
      typed.addMetric('TaskWriteUnits', MetricUnit.Count, cost.writeUnits + cost.indexWriteUnits);
      typed.addMetric('TaskReadUnits', MetricUnit.Count, cost.readUnits);
      typed.addMetric('TaskHandlerMs', MetricUnit.Milliseconds, cost.handlerMs);
    },
    flush: () => {
      metrics.publishStoredMetrics();
      for (const typed of [...perType.values(), ...perOwner.values()]) typed.publishStoredMetrics();
      perType.clear();
      perOwner.clear();
    },
  };
}

const RECENT_TIMINGS = 1_000;

/** Keeps the figures in memory (counters in full, the latest timings): for tests and for the local stack's stats. */
export class RecordingMetrics implements LeaseholdMetrics {
  readonly counters = new Map<CounterName, number>();
  readonly timings = new Map<TimingName, number[]>();
  readonly gauges = new Map<GaugeName, number>();
  /** Per task type, the latest of each type gauge. */
  readonly typeGauges = new Map<string, Map<TypeGaugeName, number>>();
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
  typeGauge(type: string, name: TypeGaugeName, value: number): void {
    const gauges = this.typeGauges.get(type) ?? new Map<TypeGaugeName, number>();
    this.typeGauges.set(type, gauges.set(name, value));
  }
  /** Finished tasks' costs summed by type, then owner. */
  readonly costs = new Map<string, Map<string, TaskCost>>();
  taskCost(type: string, owner: string, cost: TaskCost): void {
    const owners = this.costs.get(type) ?? new Map<string, TaskCost>();
    this.costs.set(type, owners.set(owner, addCost(owners.get(owner), cost)));
  }
  flush(): void {
    this.flushes++;
  }
  get(name: CounterName): number {
    return this.counters.get(name) ?? 0;
  }
}
