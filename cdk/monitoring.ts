/**
 * Alarms on lease health (lease renewal success below 99 % for 5 minutes; more than 10 expired leases
 * in 5 minutes), on work that waits, and on whatever stops work without a worker error: the API's
 * 5xx and its function's errors and throttles, DynamoDB throttling on the table and each index,
 * asynchronous events Lambda dropped, recursion drops, Scheduler target errors and dead letters. A
 * failed task is the application's business and pages only as a failure rate. The alarms notify a topic
 * the stack creates, or the one the AlarmTopicArn parameter names. Plus a dashboard. Leasehold's own
 * metrics come from the functions' Embedded Metric Format logs (the deployment's namespace, default Leasehold; dimension service).
 */
import { CfnCondition, CfnParameter, Duration, Fn, Stack } from 'aws-cdk-lib';
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
import type { IHttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { CounterName, GaugeName, TimingName } from '../shared/metrics.js';

/** The default namespace of the functions' own metrics. */
export const METRICS_NAMESPACE = 'Leasehold';

export interface MonitoringProps {
  /** The CloudWatch namespace the functions write their metrics to (POWERTOOLS_METRICS_NAMESPACE). */
  metricsNamespace: string;
  worker: IFunction;
  recovery: IFunction;
  api: IFunction;
  fire: IFunction;
  deadLetters: IQueue;
  httpApi: IHttpApi;
  /** The task table's name and its global secondary indexes' names (DynamoDB's throttle metrics). */
  table: { tableName: string; indexNames: readonly string[] };
  /** The Scheduler groups whose deliveries start work (the stack's ticks, the users' schedules). */
  scheduleGroups: readonly string[];
  /** The most worker invocations a minute the fleet's cap explains (fleet-rules.ts); more for minutes is a loop. */
  workerInvocationsPerMinute: number;
}

const minute = Duration.minutes(1);

/** A due task older than this (for 3 minutes) pages: five missed worker ticks, well before ten minutes. */
export const OLDEST_DUE_AGE_ALARM_MS = 300_000;
/** Failed tasks page only as a rate: at least this many ended in 15 minutes, and half or more FAILED. */
export const FAILURE_RATE_MIN_TASKS = 10;

/** The functions' own metrics in the deployment's namespace. */
const metricsIn =
  (namespace: string) =>
  (
    service: 'leasehold-worker' | 'leasehold-recovery',
    name: CounterName | TimingName | GaugeName,
    statistic = 'Sum',
    period = minute,
  ): Metric =>
    new Metric({ namespace, metricName: name, dimensionsMap: { service }, statistic, period });

/** A Lambda metric of one function (AWS/Lambda, FunctionName). */
function lambdaMetric(fn: IFunction, metricName: string): Metric {
  return new Metric({
    namespace: 'AWS/Lambda',
    metricName,
    dimensionsMap: { FunctionName: fn.functionName },
    statistic: 'Sum',
    period: Duration.minutes(5),
  });
}

function dynamoMetric(metricName: string, dimensionsMap: Record<string, string>): Metric {
  return new Metric({
    namespace: 'AWS/DynamoDB',
    metricName,
    dimensionsMap,
    statistic: 'Sum',
    period: Duration.minutes(5),
  });
}

function schedulerMetric(metricName: string, group: string): Metric {
  return new Metric({
    namespace: 'AWS/Scheduler',
    metricName,
    dimensionsMap: { ScheduleGroup: group },
    statistic: 'Sum',
    period: Duration.minutes(5),
  });
}

/** The alarm-topic condition of each stack (the first Leasehold's Monitoring made it). */
const NOTIFY_CONDITIONS = new WeakMap<Stack, CfnCondition>();

export class Monitoring extends Construct {
  readonly alarms: Alarm[] = [];
  readonly dashboard: Dashboard;
  /** The stack's alarm topic (used unless AlarmTopicArn names another). */
  readonly topic: Topic;
  /** The topic the alarms notify. */
  readonly topicArn: string;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    // The deployment's own metrics: each Leasehold in an account and region writes under its namespace.
    const leaseholdMetric = metricsIn(props.metricsNamespace);
    // At stack level, so its name is plain: `cdk deploy --parameters AlarmTopicArn=arn:aws:sns:...`;
    // one for the stack, shared by every Leasehold in it.
    const stack = Stack.of(this);
    const topicArn =
      (stack.node.tryFindChild('AlarmTopicArn') as CfnParameter | undefined) ??
      new CfnParameter(stack, 'AlarmTopicArn', {
        type: 'String',
        default: '',
        description:
          "An existing SNS topic ARN the alarms notify; empty: the stack's own topic (output AlarmTopic: subscribe to it)",
      });
    // One condition per stack too: equal conditions are a CloudFormation lint warning (W9053).
    const useExisting =
      NOTIFY_CONDITIONS.get(stack) ??
      new CfnCondition(this, 'NotifyTopic', {
        expression: Fn.conditionNot(Fn.conditionEquals(topicArn.valueAsString, '')),
      });
    NOTIFY_CONDITIONS.set(stack, useExisting);
    // A default deploy notifies a topic, not nobody: subscribe an address or a chat integration to it.
    this.topic = new Topic(this, 'AlarmTopic', { enforceSSL: true, displayName: 'Leasehold alarms' });
    this.topicArn = Fn.conditionIf(
      useExisting.logicalId,
      topicArn.valueAsString,
      this.topic.topicArn,
    ).toString();

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
      (a.node.defaultChild as CfnAlarm).alarmActions = [this.topicArn];
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
    // A failed task is the application's business (a bad payload, a refusing upstream); the system is
    // failing when most tasks do.
    const failureRate = new MathExpression({
      expression: `IF(FILL(failed, 0) + FILL(succeeded, 0) >= ${FAILURE_RATE_MIN_TASKS}, FILL(failed, 0) / (FILL(failed, 0) + FILL(succeeded, 0)), 0)`,
      usingMetrics: {
        failed: leaseholdMetric('leasehold-worker', 'TasksFailed', 'Sum', Duration.minutes(15)),
        succeeded: leaseholdMetric('leasehold-worker', 'TasksSucceeded', 'Sum', Duration.minutes(15)),
      },
      period: Duration.minutes(15),
      label: 'share of ended tasks that FAILED',
    });
    alarm(
      'TaskFailureRate',
      failureRate,
      0.5,
      ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      1,
      `Half or more of the tasks that ended in 15 minutes (at least ${FAILURE_RATE_MIN_TASKS}) FAILED: a dependency or a deploy is failing them, not one bad task. Single failures are in TasksFailed on the dashboard.`,
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
      "Worker invocations were throttled: the account's concurrency ran out (or the worker's reservation, if set); scale-ups and ticks wait or are dropped.",
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

    // What stops work without a worker error.
    alarm(
      'ApiServerErrors',
      props.httpApi.metricServerError({ period: Duration.minutes(5), statistic: 'Sum' }),
      0,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      1,
      "The HTTP API answered 5xx: enqueues are failing, so no task is written and no queue alarm can see it. See the API function's logs.",
    );
    for (const [name, metric, what] of [
      ['ApiErrors', props.api.metricErrors({ period: Duration.minutes(5) }), 'returned errors'],
      [
        'ApiThrottles',
        props.api.metricThrottles({ period: Duration.minutes(5) }),
        "was throttled (the account's concurrency ran out)",
      ],
      [
        'RecoveryThrottles',
        props.recovery.metricThrottles({ period: Duration.minutes(5) }),
        'was throttled: its events are retried for a minute, then dropped',
      ],
    ] as const)
      alarm(
        name,
        metric,
        0,
        ComparisonOperator.GREATER_THAN_THRESHOLD,
        1,
        `The ${name.replace(/(Errors|Throttles)$/, '').toLowerCase()} function ${what}.`,
      );
    for (const [name, fn] of [
      ['WorkerEventsDropped', props.worker],
      ['RecoveryEventsDropped', props.recovery],
      ['FireEventsDropped', props.fire],
    ] as const)
      alarm(
        name,
        lambdaMetric(fn, 'AsyncEventsDropped'),
        0,
        ComparisonOperator.GREATER_THAN_THRESHOLD,
        1,
        `Lambda dropped asynchronous events of ${fn.node.id} (throttled past their maximum age, or out of retries): ticks, sweeps or scale-ups that never ran.`,
      );
    alarm(
      'TableThrottled',
      new MathExpression({
        expression: 'FILL(reads, 0) + FILL(writes, 0)',
        usingMetrics: {
          reads: dynamoMetric('ReadThrottleEvents', { TableName: props.table.tableName }),
          writes: dynamoMetric('WriteThrottleEvents', { TableName: props.table.tableName }),
        },
        period: Duration.minutes(5),
        label: 'table throttle events',
      }),
      0,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      1,
      'DynamoDB throttled requests on the task table: lease renewals and claims slow down or fail (503s, lost leases). See docs/operations.md, Capacity.',
    );
    for (const index of props.table.indexNames)
      alarm(
        `Index${index[0]!.toUpperCase()}${index.slice(1)}Throttled`,
        dynamoMetric('WriteThrottleEvents', {
          TableName: props.table.tableName,
          GlobalSecondaryIndexName: index,
        }),
        0,
        ComparisonOperator.GREATER_THAN_THRESHOLD,
        1,
        `DynamoDB throttled writes to the ${index} index; its back-pressure throttles the table's writes that touch it.`,
      );
    for (const [i, group] of props.scheduleGroups.entries())
      alarm(
        i === 0 ? 'SchedulerTargetErrors' : `SchedulerTargetErrors${i + 1}`,
        new MathExpression({
          expression: 'FILL(errors, 0) + FILL(dropped, 0)',
          usingMetrics: {
            errors: schedulerMetric('TargetErrorCount', group),
            dropped: schedulerMetric('InvocationDroppedCount', group),
          },
          period: Duration.minutes(5),
          label: 'Scheduler target errors and dropped invocations',
        }),
        0,
        ComparisonOperator.GREATER_THAN_THRESHOLD,
        1,
        'EventBridge Scheduler could not invoke a target, or dropped an invocation: ticks (worker, recovery) or user schedule fires are not arriving.',
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
