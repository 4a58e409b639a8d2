/**
 * Alarms on lease health (lease renewal success below 99 % for 5 minutes; more than 10 expired leases
 * in 5 minutes) and for failed tasks, dead letters and worker errors and throttles, plus a dashboard.
 * Metrics come from the functions' Embedded Metric Format logs (namespace Leasehold, dimension service).
 */
import { Aws, CfnCondition, CfnParameter, Duration, Fn, Stack } from 'aws-cdk-lib';
import {
  Alarm,
  CfnAlarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  MathExpression,
  Metric,
  SingleValueWidget,
  TreatMissingData,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { CounterName, GaugeName, TimingName } from '../shared/metrics.js';

export const METRICS_NAMESPACE = 'Leasehold';

export interface MonitoringProps {
  worker: IFunction;
  recovery: IFunction;
  api: IFunction;
  fire: IFunction;
  deadLetters: IQueue;
  /** The most worker invocations a minute the fleet's cap explains (fleet-rules.ts); more for minutes is a loop. */
  workerInvocationsPerMinute: number;
}

const minute = Duration.minutes(1);

/** A due task older than this pages: ten minutes is ten missed worker ticks. */
export const OLDEST_DUE_AGE_ALARM_MS = 600_000;

function leaseholdMetric(
  service: 'leasehold-worker' | 'leasehold-recovery',
  name: CounterName | TimingName | GaugeName,
  statistic = 'Sum',
  period = minute,
): Metric {
  return new Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { service },
    statistic,
    period,
  });
}

export class Monitoring extends Construct {
  readonly alarms: Alarm[] = [];
  readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    // At stack level, so its name is plain: `cdk deploy --parameters AlarmTopicArn=arn:aws:sns:...`.
    const topicArn = new CfnParameter(Stack.of(this), 'AlarmTopicArn', {
      type: 'String',
      default: '',
      description: 'SNS topic ARN the alarms notify (leave empty for no notifications)',
    });
    const notify = new CfnCondition(this, 'NotifyTopic', {
      expression: Fn.conditionNot(Fn.conditionEquals(topicArn.valueAsString, '')),
    });

    const renewalsOk = leaseholdMetric('leasehold-worker', 'LeaseRenewalsOk');
    const renewals = leaseholdMetric('leasehold-worker', 'LeaseRenewals');
    const renewalSuccess = new MathExpression({
      expression: 'IF(total > 0, ok / total, 1)',
      usingMetrics: { ok: renewalsOk, total: renewals },
      period: minute,
      label: 'lease renewal success',
    });
    const expired = new MathExpression({
      expression: 'requeued + failed + cancelled',
      usingMetrics: {
        requeued: leaseholdMetric('leasehold-recovery', 'RecoveredRequeued', 'Sum', Duration.minutes(5)),
        failed: leaseholdMetric('leasehold-recovery', 'RecoveredFailed', 'Sum', Duration.minutes(5)),
        cancelled: leaseholdMetric('leasehold-recovery', 'RecoveredCancelled', 'Sum', Duration.minutes(5)),
      },
      period: Duration.minutes(5),
      label: 'expired leases',
    });

    const alarm = (
      name: string,
      metric: IMetric,
      threshold: number,
      comparisonOperator: ComparisonOperator,
      evaluationPeriods: number,
      description: string,
    ) => {
      const a = new Alarm(this, name, {
        metric,
        threshold,
        comparisonOperator,
        evaluationPeriods,
        treatMissingData: TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
      });
      (a.node.defaultChild as CfnAlarm).alarmActions = Fn.conditionIf(
        notify.logicalId,
        [topicArn.valueAsString],
        Aws.NO_VALUE,
      ) as unknown as string[];
      this.alarms.push(a);
      return a;
    };
    alarm(
      'LeaseRenewalSuccess',
      renewalSuccess,
      0.99,
      ComparisonOperator.LESS_THAN_THRESHOLD,
      5,
      'Lease renewal success below 99 % for 5 minutes: workers are losing leases (throttling, timeouts, blocked event loops).',
    );
    alarm(
      'ExpiredLeases',
      expired,
      10,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      1,
      'More than 10 leases expired in 5 minutes: workers are dying or stalling mid-task.',
    );
    // Nothing else would notice a queue that is not being worked: no errors, no throttles, just waiting tasks.
    alarm(
      'OldestDueTaskAge',
      leaseholdMetric('leasehold-recovery', 'OldestDueAgeMs', 'Maximum'),
      OLDEST_DUE_AGE_ALARM_MS,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      3,
      `A due task has waited more than ${OLDEST_DUE_AGE_ALARM_MS / 60_000} minutes for 3 minutes: workers are not claiming, or not keeping up.`,
    );
    const backlogWithoutClaims = new MathExpression({
      expression: 'IF(ready > 0 AND FILL(claims, 0) == 0, 1, 0)',
      usingMetrics: {
        ready: leaseholdMetric('leasehold-recovery', 'ReadyTasks', 'Minimum'),
        claims: leaseholdMetric('leasehold-worker', 'Claims'),
      },
      period: minute,
      label: 'due tasks waiting and none claimed',
    });
    alarm(
      'BacklogWithoutClaims',
      backlogWithoutClaims,
      0,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      5,
      'Due tasks waited for 5 minutes and no worker claimed any: the workers are not running or cannot claim (see their logs).',
    );
    alarm(
      'TasksFailed',
      leaseholdMetric('leasehold-worker', 'TasksFailed').with({ period: Duration.minutes(5) }),
      0,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      1,
      'Tasks ended FAILED (attempts exhausted or a non-retryable error).',
    );
    alarm(
      'ScheduleDeadLetters',
      props.deadLetters.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(5),
        statistic: 'Maximum',
      }),
      0,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      1,
      "A tick was lost: Scheduler could not invoke a function (its retry policy ran out), or a user schedule tick failed the fire function and all of Lambda's async retries (its on-failure destination). The message says which.",
    );
    alarm(
      'WorkerErrors',
      props.worker.metricErrors({ period: Duration.minutes(5) }),
      0,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      1,
      'The worker function returned errors.',
    );
    alarm(
      'WorkerThrottles',
      props.worker.metricThrottles({ period: Duration.minutes(5) }),
      0,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      1,
      'Worker invocations were throttled (reserved concurrency reached).',
    );
    // The worker starts more of itself and allows recursive loops (RecursiveLoop: Allow), bounding its
    // chains by its seats: this alarm is the guard Lambda's loop detection would have been.
    alarm(
      'WorkerInvocationsUnexplained',
      props.worker.metricInvocations({ period: minute, statistic: 'Sum' }),
      props.workerInvocationsPerMinute,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      3,
      `More than ${props.workerInvocationsPerMinute} worker invocations a minute for 3 minutes, more than its seats explain: invocations are being started outside the fleet's bound (a loop). See the logs' source and generation keys.`,
    );
    // Lambda stops a chain only if RecursiveLoop is set back to Terminate; then a dropped start is lost work.
    alarm(
      'WorkerRecursionsDropped',
      new Metric({
        namespace: 'AWS/Lambda',
        metricName: 'RecursiveInvocationsDropped',
        dimensionsMap: { FunctionName: props.worker.functionName },
        statistic: 'Sum',
        period: Duration.minutes(5),
      }),
      0,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      1,
      "Lambda's recursive loop detection dropped worker invocations: the fleet's scale-ups or hand-overs were stopped (is the worker's RecursiveLoop still Allow?).",
    );
    alarm(
      'FireErrors',
      props.fire.metricErrors({ period: Duration.minutes(5) }),
      0,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      1,
      'The schedule fire function returned errors: Lambda retries each failed tick twice (asynchronous invocation), then sends it to the dead-letter queue.',
    );
    alarm(
      'RecoveryErrors',
      props.recovery.metricErrors({ period: Duration.minutes(5) }),
      0,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      1,
      'The recovery function returned errors: expired leases are not being recovered.',
    );

    this.dashboard = new Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(3) });
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'Queue depth and running',
        left: [
          leaseholdMetric('leasehold-recovery', 'QueueDepth', 'Maximum'),
          leaseholdMetric('leasehold-recovery', 'ReadyTasks', 'Maximum'),
          leaseholdMetric('leasehold-recovery', 'RunningTasks', 'Maximum'),
        ],
        right: [leaseholdMetric('leasehold-recovery', 'OldestDueAgeMs', 'Maximum')],
        width: 12,
      }),
      new GraphWidget({
        title: 'Throughput (tasks per minute)',
        left: (['TasksSucceeded', 'TasksRetried', 'TasksFailed', 'TasksCancelled', 'Claims'] as const).map(
          (n) => leaseholdMetric('leasehold-worker', n),
        ),
        width: 12,
      }),
      new GraphWidget({
        title: 'Task duration and queue wait (ms)',
        left: [
          leaseholdMetric('leasehold-worker', 'TaskDuration', 'p50'),
          leaseholdMetric('leasehold-worker', 'TaskDuration', 'p99'),
        ],
        right: [
          leaseholdMetric('leasehold-worker', 'QueueWait', 'p50'),
          leaseholdMetric('leasehold-worker', 'QueueWait', 'p99'),
        ],
        width: 12,
      }),
      new GraphWidget({
        title: 'Lease health',
        left: [renewalSuccess],
        right: [
          leaseholdMetric('leasehold-worker', 'LeasesLost'),
          expired,
          leaseholdMetric('leasehold-worker', 'LateCompletionsRejected'),
          leaseholdMetric('leasehold-worker', 'WastedClaimWrites'),
        ],
        width: 12,
      }),
      new GraphWidget({
        title: 'Event-loop lag (ms)',
        left: [
          leaseholdMetric('leasehold-worker', 'EventLoopLag', 'Maximum'),
          leaseholdMetric('leasehold-worker', 'EventLoopLag', 'p99'),
        ],
        width: 12,
      }),
      new SingleValueWidget({
        title: 'Errors and throttles',
        metrics: [
          props.worker.metricErrors(),
          props.worker.metricThrottles(),
          props.recovery.metricErrors(),
          props.api.metricErrors(),
        ],
        width: 12,
      }),
    );
  }
}
