/** The validation findings Leasehold accepts, each naming the rule and giving the reason. */
import { Stack, Validations } from 'aws-cdk-lib';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import type { IConstruct } from 'constructs';
import type { LeaseholdFunction } from './leasehold-function.js';
import type { Monitoring } from './monitoring.js';
import type { LeaseholdSchedules } from './schedules.js';
import type { UserSchedules } from './user-schedules.js';
import type { FunctionName } from './function-entries.js';

/** What of a Leasehold construct the acknowledgements name. */
interface Acknowledged extends IConstruct {
  functions: Record<FunctionName, LeaseholdFunction>;
  schedules: LeaseholdSchedules;
  userSchedules: UserSchedules;
  monitoring: Monitoring;
}

export function acknowledgeFindings(stack: Acknowledged): void {
  for (const f of Object.values(stack.functions)) {
    Validations.of(f.fn).acknowledge({
      id: 'AwsSolutions::AwsSolutions-L1',
      reason:
        'Pinned to Node.js 22, the Lambda runtime the pinned dependencies are verified on; a newer runtime is a deliberate, tested upgrade.',
    });
  }
  Validations.of(stack.schedules.deadLetters).acknowledge({
    id: 'AwsSolutions::AwsSolutions-SQS3',
    reason:
      'This queue is the dead-letter queue of the EventBridge Scheduler targets (a Scheduler DLQ, not an SQS redrive, which the rule cannot see).',
  });
  // The Scheduler role the LambdaInvoke target creates may invoke one function and its versions.
  for (const f of [stack.functions.worker, stack.functions.recovery]) {
    const logicalId = Stack.of(stack).getLogicalId(f.fn.node.defaultChild as CfnFunction);
    Validations.of(Stack.of(stack)).acknowledge({
      id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${logicalId}.Arn>:*]`,
      reason:
        'The Scheduler role may invoke exactly this function and its versions (ARN:*); it is scoped to one function.',
    });
  }
  const group = Stack.of(stack).resolve(stack.userSchedules.group.scheduleGroupName) as string;
  Validations.of(stack.functions.api).acknowledge({
    id: `AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/${group}/*]`,
    reason:
      'The API manages the schedules users name at run time, so the resource is every schedule in the one group kept for user schedules, and nothing else.',
  });
  Validations.of(stack.monitoring.topic).acknowledge({
    id: 'AwsSolutions::AwsSolutions-SNS2',
    reason:
      'Alarm notifications carry alarm names and states, no task data; CloudWatch cannot publish to a topic under the AWS-managed SNS key, and a customer-managed key for them costs more than that data is worth.',
  });
  Validations.of(stack.monitoring).acknowledge({
    id: 'CloudFormation-Validate::W1030',
    reason:
      'The alarm topic parameter may be empty; the alarm actions use it only under a condition that it is not.',
  });
}
