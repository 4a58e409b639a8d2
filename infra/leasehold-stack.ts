/**
 * The reference app's stack (`npx cdk deploy`): the Leasehold construct with this repository's task
 * catalog, and the outputs the CLI, the dashboard and direct clients need.
 */
import { Aws, CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { taskDefinitions } from '../tasks/catalog.js';
import { Leasehold, type LeaseholdProps } from '../cdk/leasehold.js';

const repositoryRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The construct's settings (the app reads them from CDK context: cdk/deployment-settings.ts); the task module is this repository's. */
export interface LeaseholdStackProps
  extends
    StackProps,
    Omit<LeaseholdProps, 'tasks' | 'taskDefinitions' | 'projectRoot' | 'depsLockFilePath'> {}

export class LeaseholdStack extends Stack {
  readonly leasehold: Leasehold;

  constructor(scope: Construct, id: string, props: LeaseholdStackProps = {}) {
    super(scope, id, props);
    // The id 'Default' leaves the construct out of the logical ids: a stack deployed before the
    // construct existed updates in place (its table is kept, not replaced).
    // The construct's settings are the stack's props (it reads its own keys; env and the rest are the Stack's).
    this.leasehold = new Leasehold(this, 'Default', {
      ...props,
      tasks: join(repositoryRoot, 'tasks', 'catalog.ts'),
      taskDefinitions,
      projectRoot: repositoryRoot,
      depsLockFilePath: join(repositoryRoot, 'package-lock.json'),
    });
    const l = this.leasehold;
    new CfnOutput(this, 'ApiUrl', {
      value: l.apiUrl,
      description: 'Base URL of the HTTP API (sign requests with SigV4, service execute-api)',
    });
    new CfnOutput(this, 'TableName', { value: l.table.tableName });
    new CfnOutput(this, 'TableArn', {
      value: l.table.tableArn,
      description: 'The task table: directClientPolicy({ tableArn, ... }) for a direct client',
    });
    new CfnOutput(this, 'WorkerFunctionName', {
      value: l.functions.worker.fn.functionName,
      description:
        "The worker function: a direct client's workerFunctionName, and where the worker's logs are",
    });
    new CfnOutput(this, 'TableKeyArn', {
      value: l.taskTable.key.keyArn,
      description:
        "The task table's KMS key: direct clients (leasehold/client/direct) need kms:Decrypt on it",
    });
    new CfnOutput(this, 'AlarmTopic', {
      value: l.monitoring.topicArn,
      description: 'The topic the alarms notify: subscribe an address or a chat integration to it',
    });
    new CfnOutput(this, 'DashboardUrl', {
      value: `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards:name=${l.monitoring.dashboard.dashboardName}`,
    });
  }
}
