/**
 * The narrowest IAM policy a direct client (`leasehold/client/direct`) works with: the one the README
 * and docs/api.md show, and the one `test/direct-client-policy.test.ts` runs the client under in the
 * sim's IAM gate. What it confines, with dynamodb:LeadingKeys: reads and writes of items to task items
 * (`TASK#<id>`) and the caller's outcome counters (`STATS#<owner>`, written by a cancel); no write to
 * the queue's control items (fleet seats, concurrency slots, the queue summary, locks, schedules). What
 * IAM cannot confine: which owner's tasks (their keys are `TASK#<id>`, not the owner's), so a direct
 * client can still act on another owner's task by id. Direct mode is for trusted code; untrusted
 * producers use the API, where the owner is the caller's IAM identity.
 */

export interface DirectPolicyInput {
  /** The task table's ARN (the stack's TableArn output). */
  tableArn: string;
  /** The table's customer-managed KMS key (the stack's TableKeyArn output); none for an AWS-owned key. */
  tableKeyArn?: string;
  /** The owner the client acts as (its `owner` option, or its IAM ARN): its counters' partition. */
  owner: string;
  /** `workerFunctionName`'s ARN, when the client starts a worker after an enqueue as the API does. */
  workerFunctionArn?: string;
}

interface Statement {
  Sid: string;
  Effect: 'Allow';
  Action: string[];
  Resource: string[];
  Condition?: Record<string, Record<string, string[]>>;
}

export function directClientPolicy(input: DirectPolicyInput): {
  Version: '2012-10-17';
  Statement: Statement[];
} {
  const statements: Statement[] = [
    {
      Sid: 'TaskItemsOnly',
      Effect: 'Allow',
      Action: [
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
        'dynamodb:BatchGetItem',
        'dynamodb:Query',
      ],
      Resource: [input.tableArn],
      // Every partition a request touches is a task's, or this owner's counters: never FLEET, QUEUE,
      // LIMIT#, LOCK#, SCHEDULES# or another owner's STATS#.
      Condition: {
        'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['TASK#*', `STATS#${input.owner}`] },
        // ForAllValues holds for a request that names no key; a request here always names one.
        Null: { 'dynamodb:LeadingKeys': ['false'] },
      },
    },
    {
      Sid: 'ListByOwnerIndex',
      Effect: 'Allow',
      Action: ['dynamodb:Query'],
      Resource: [`${input.tableArn}/index/owner`],
    },
  ];
  // DynamoDB uses the table's customer-managed key as the caller.
  if (input.tableKeyArn)
    statements.push({
      Sid: 'TableKey',
      Effect: 'Allow',
      Action: ['kms:Decrypt'],
      Resource: [input.tableKeyArn],
    });
  if (input.workerFunctionArn)
    statements.push(
      {
        Sid: 'StartAWorker',
        Effect: 'Allow',
        Action: ['lambda:InvokeFunction'],
        Resource: [input.workerFunctionArn],
      },
      {
        // The fleet's seats are read (never written) before a worker is started.
        Sid: 'ReadFleetSeats',
        Effect: 'Allow',
        Action: ['dynamodb:Query'],
        Resource: [input.tableArn],
        Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['FLEET'] } },
      },
    );
  return { Version: '2012-10-17', Statement: statements };
}
