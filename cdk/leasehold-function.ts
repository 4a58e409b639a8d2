/**
 * One Leasehold Lambda function: bundled by the local esbuild with the AWS SDK inside (so the deployed
 * code is the tested code, not the runtime's SDK), ARM64, its own log group with retention, and its
 * own role that lists exactly the DynamoDB actions it uses on exactly the table and indexes it uses.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Effect, PolicyDocument, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, RecursiveLoop, Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat, type ICommandHooks } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { LAMBDA_ALIASES, LAMBDA_BUNDLING } from './lambda-bundling.js';
import type { TaskTable } from './task-table.js';
import type { FunctionName } from './function-entries.js';
import { join } from 'node:path';

export interface TableAccess {
  /** Actions on the table's items. */
  table: string[];
  /** Actions on each named index (Query only ever). */
  indexes: Record<string, string[]>;
  /**
   * The partitions its item actions may touch (`dynamodb:LeadingKeys`, `*` a wildcard); none: any.
   * Requests that name no key (none here) are refused too.
   */
  leadingKeys?: string[];
  /** Partitions it may only read (GetItem, Query), apart from `leadingKeys`: read-only statement of its own. */
  readOnlyKeys?: string[];
}

export interface LeaseholdFunctionProps {
  name: FunctionName;
  /** The entry file (function-entries.ts writes it) and where esbuild runs (NodejsFunction's). */
  entry: string;
  projectRoot: string;
  depsLockFilePath: string;
  /** Where its metrics go in CloudWatch (one namespace per deployment in an account and region). */
  metricsNamespace: string;
  /**
   * Files the function reads at run time, copied next to its bundle (absolute path → name in the task
   * root): the API's OpenAPI document (openapi-document.ts), generated at synth so that no cold start
   * loads the generator.
   */
  files?: Record<string, string>;
  description: string;
  timeout: Duration;
  memorySize: number;
  environment: Record<string, string>;
  taskTable: TaskTable;
  access: TableAccess;
  logRetention: RetentionDays;
  reservedConcurrentExecutions?: number;
  /**
   * Allow a function that invokes itself on purpose (the worker's fleet) to chain past Lambda's recursive
   * loop detection, which would stop the ~16th hop; the function bounds its chains itself.
   */
  allowRecursiveLoop?: boolean;
  /** Bundle source maps and enable them (`-c leasehold:sourceMaps=true`): stack traces in TypeScript. */
  sourceMaps?: boolean;
}

/**
 * What a function needs of the table's customer-managed key: DynamoDB calls kms:Decrypt as the caller
 * for every data-plane request, reads and writes alike (AWS documents no other action for them; the
 * sim checks it). CDK's grants add kms:Encrypt, kms:GenerateDataKey and kms:DescribeKey for writers:
 * not granted (review 2, LOW-4), as the direct client's policy never had them.
 */
export const TABLE_KEY_ACTIONS = ['kms:Decrypt'];

/** Bundling hooks that copy `files` into the asset after esbuild (local bundling: the host's shell). */
function copyingFiles(files: Record<string, string>): ICommandHooks {
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (_inputDir, outputDir) =>
      Object.entries(files).map(([from, to]) => `cp "${from}" "${join(outputDir, to)}"`),
  };
}

export class LeaseholdFunction extends Construct {
  readonly fn: NodejsFunction;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: LeaseholdFunctionProps) {
    super(scope, id);
    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const { taskTable, access } = props;
    const statements = [
      // Lambda writes the function's logs with this role (see GRANTS_WITHOUT_ROUTINE_USE).
      new PolicyStatement({
        sid: 'WriteOwnLogs',
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
      new PolicyStatement({
        sid: 'TaskItems',
        actions: access.table,
        resources: [taskTable.table.tableArn],
        ...(access.leadingKeys
          ? {
              conditions: {
                'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': access.leadingKeys },
                // ForAllValues holds for a request that names no key: require one.
                Null: { 'dynamodb:LeadingKeys': 'false' },
              },
            }
          : {}),
      }),
      ...(access.readOnlyKeys
        ? [
            new PolicyStatement({
              sid: 'ReadOnlyItems',
              actions: ['dynamodb:GetItem', 'dynamodb:Query'],
              resources: [taskTable.table.tableArn],
              conditions: {
                'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': access.readOnlyKeys },
                Null: { 'dynamodb:LeadingKeys': 'false' },
              },
            }),
          ]
        : []),
      ...Object.entries(access.indexes).map(
        ([index, actions]) =>
          new PolicyStatement({
            sid: `Index${index[0]!.toUpperCase()}${index.slice(1)}`,
            actions,
            resources: [taskTable.indexArn(index)],
          }),
      ),
      new PolicyStatement({
        sid: 'TableKey',
        effect: Effect.ALLOW,
        actions: TABLE_KEY_ACTIONS,
        resources: [taskTable.key.keyArn],
      }),
    ];
    const role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Leasehold ${props.name}: least privilege`,
      inlinePolicies: { leasehold: new PolicyDocument({ statements }) },
    });
    this.fn = new NodejsFunction(this, 'Function', {
      entry: props.entry,
      handler: 'handler',
      description: props.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout,
      role,
      logGroup: this.logGroup,
      environment: {
        ...props.environment,
        LEASEHOLD_TABLE: taskTable.table.tableName,
        POWERTOOLS_METRICS_NAMESPACE: props.metricsNamespace,
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        // Only when asked: the maps are three quarters of each zip, and mapping costs every cold start
        // (30-40 ms more require, 14 MB more memory) and every Error.stack access.
        ...(props.sourceMaps ? { NODE_OPTIONS: '--enable-source-maps' } : {}),
      },
      ...(props.allowRecursiveLoop ? { recursiveLoop: RecursiveLoop.ALLOW } : {}),
      ...(props.reservedConcurrentExecutions === undefined
        ? {}
        : { reservedConcurrentExecutions: props.reservedConcurrentExecutions }),
      projectRoot: props.projectRoot,
      depsLockFilePath: props.depsLockFilePath,
      bundling: {
        ...LAMBDA_BUNDLING,
        sourceMap: props.sourceMaps ?? false,
        format: OutputFormat.CJS,
        mainFields: [...LAMBDA_BUNDLING.mainFields],
        esbuildArgs: { '--alias': Object.entries(LAMBDA_ALIASES).map(([from, to]) => `${from}=${to}`) },
        ...(props.files ? { commandHooks: copyingFiles(props.files) } : {}),
      },
    });
  }
}
