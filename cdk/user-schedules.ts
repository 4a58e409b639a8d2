/**
 * Recurring schedules users create through the API: their own schedule group (apart from the worker
 * and recovery schedules, so no user name can replace those), the fire function each schedule
 * invokes, the role EventBridge Scheduler assumes to invoke it, and the API's rights to manage
 * schedules in that group and to pass exactly that role.
 */
import { Aws, RemovalPolicy } from 'aws-cdk-lib';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { ScheduleGroup } from 'aws-cdk-lib/aws-scheduler';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

export interface UserSchedulesProps {
  api: IFunction;
  fire: IFunction;
  deadLetters: IQueue;
}

/** What the API calls (scheduler-sync.ts): update, else create; delete. It never reads a schedule back. */
export const SCHEDULE_MANAGEMENT_ACTIONS = [
  'scheduler:CreateSchedule',
  'scheduler:DeleteSchedule',
  'scheduler:UpdateSchedule',
];

export class UserSchedules extends Construct {
  readonly group: ScheduleGroup;
  readonly invokeRole: Role;

  constructor(scope: Construct, id: string, props: UserSchedulesProps) {
    super(scope, id);
    this.group = new ScheduleGroup(this, 'Group', { removalPolicy: RemovalPolicy.DESTROY });
    this.invokeRole = new Role(this, 'InvokeRole', {
      // Only schedules of this group may use it (the confused-deputy guard Scheduler documents).
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: {
          StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID, 'aws:SourceArn': this.group.scheduleGroupArn },
        },
      }),
      description: 'EventBridge Scheduler: invoke the Leasehold fire function for user schedules',
    });
    this.invokeRole.addToPolicy(
      new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [props.fire.functionArn] }),
    );
    // Used only when a tick cannot be delivered (see GRANTS_WITHOUT_ROUTINE_USE).
    this.invokeRole.addToPolicy(
      new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [props.deadLetters.queueArn] }),
    );

    props.api.addToRolePolicy(
      new PolicyStatement({
        sid: 'ManageUserSchedules',
        actions: SCHEDULE_MANAGEMENT_ACTIONS,
        resources: [
          `arn:${Aws.PARTITION}:scheduler:${Aws.REGION}:${Aws.ACCOUNT_ID}:schedule/${this.group.scheduleGroupName}/*`,
        ],
      }),
    );
    props.api.addToRolePolicy(
      new PolicyStatement({
        sid: 'PassSchedulerRole',
        effect: Effect.ALLOW,
        actions: ['iam:PassRole'],
        resources: [this.invokeRole.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      }),
    );
  }
}
