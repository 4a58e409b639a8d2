/**
 * EventBridge Scheduler: the worker every minute and recovery at the recovery interval, in a schedule
 * group of their own, each with an explicit retry policy, a maximum event age, and an encrypted,
 * TLS-only dead-letter queue for invocations that still fail.
 */
import { SCHEDULED_TICK_SOURCE } from '../shared/fleet/worker-invoker.js';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import {
  ContextAttribute,
  Schedule,
  ScheduleExpression,
  ScheduleGroup,
  ScheduleTargetInput,
} from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

export interface LeaseholdSchedulesProps {
  worker: IFunction;
  recovery: IFunction;
  recoveryIntervalMs: number;
}

export class LeaseholdSchedules extends Construct {
  readonly group: ScheduleGroup;
  readonly deadLetters: Queue;
  readonly worker: Schedule;
  readonly recovery: Schedule;

  constructor(scope: Construct, id: string, props: LeaseholdSchedulesProps) {
    super(scope, id);
    this.group = new ScheduleGroup(this, 'Group', { removalPolicy: RemovalPolicy.DESTROY });
    this.deadLetters = new Queue(this, 'DeadLetters', {
      encryption: QueueEncryption.KMS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    const target = (fn: IFunction, source: string, retryAttempts: number) =>
      new LambdaInvoke(fn, {
        deadLetterQueue: this.deadLetters,
        // A missed tick is not worth catching up late: the next one comes within the minute.
        maxEventAge: Duration.minutes(1),
        retryAttempts,
        input: ScheduleTargetInput.fromObject({ source, scheduledTime: ContextAttribute.scheduledTime }),
      });
    this.worker = new Schedule(this, 'Worker', {
      description: 'Starts a Leasehold worker invocation',
      scheduleGroup: this.group,
      schedule: ScheduleExpression.rate(Duration.minutes(1)),
      target: target(props.worker, SCHEDULED_TICK_SOURCE, 2),
    });
    // Scheduler's finest rate is one minute.
    const recoveryMinutes = Math.max(1, Math.round(props.recoveryIntervalMs / 60_000));
    this.recovery = new Schedule(this, 'Recovery', {
      description: 'Runs one Leasehold recovery sweep',
      scheduleGroup: this.group,
      schedule: ScheduleExpression.rate(Duration.minutes(recoveryMinutes)),
      target: target(props.recovery, 'leasehold.recovery', 3),
    });
  }
}
