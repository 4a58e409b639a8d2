import { beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { AwsSolutionsChecks } from 'cdk-nag';
import { warmThroughputFor } from '../cdk/task-table.js';
import { API_ROUTES } from '../shared/api/api-handler.js';
import { defineConfig } from '../shared/config.js';
import { INDEX, KEY, TTL_ATTRIBUTE } from '../shared/table-layout.js';
import { LeaseholdStack } from '../infra/leasehold-stack.js';
import { FUNCTION_ACCESS } from '../cdk/function-access.js';
import type { FunctionName } from '../cdk/function-entries.js';
import { SCHEDULE_MANAGEMENT_ACTIONS } from '../cdk/user-schedules.js';
import { lambdaEnvironment } from '../cdk/lambda-env.js';
import { sizeFunctions } from '../cdk/sizing.js';
import { readDeploymentSettings } from '../cdk/deployment-settings.js';
import { GRANTS_WITHOUT_ROUTINE_USE, grantHasReason } from '../cdk/grant-reasons.js';
import { ConfigError } from '../shared/errors.js';
import { apiEvent } from './support/api-events.js';

/** What CloudFormation fills in at deploy (the template holds references): plain values to load a bundle with. */
const CONCRETE_ENV = {
  LEASEHOLD_TABLE: 'tasks',
  LEASEHOLD_REGION: 'eu-west-1',
  AWS_REGION: 'eu-west-1',
  LEASEHOLD_WORKER_FUNCTION_ARN: 'arn:aws:lambda:eu-west-1:123456789012:function:worker',
  LEASEHOLD_SCHEDULE_GROUP: 'group',
  LEASEHOLD_SCHEDULER_ROLE_ARN: 'arn:aws:iam::123456789012:role/scheduler',
  LEASEHOLD_FIRE_FUNCTION_ARN: 'arn:aws:lambda:eu-west-1:123456789012:function:fire',
  LEASEHOLD_SCHEDULE_DLQ_ARN: 'arn:aws:sqs:eu-west-1:123456789012:dlq',
  POWERTOOLS_LOG_LEVEL: 'SILENT',
};

let template: Template;
let outDir: string;
let synthOutput: string;
let json: {
  Resources: Record<string, { Type: string; Properties: any; DeletionPolicy?: string }>;
  Outputs: Record<string, unknown>;
};
let report: {
  pluginReports: {
    pluginName: string;
    conclusion: string;
    violations: unknown[];
    suppressedViolations: { ruleName: string; reason: string }[];
  }[];
};
const resources = (type: string) => Object.entries(json.Resources).filter(([, r]) => r.Type === type);

beforeAll(() => {
  // `cdk synth` as a user runs it: offline, with no credentials at all.
  const out = (outDir = mkdtempSync(join(tmpdir(), 'cdk-out-')));
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_') && !k.startsWith('LEASEHOLD_')),
  );
  // A deployer's shell left over from local testing: it must not reach the functions.
  const leftover = { LEASEHOLD_POLL_INTERVAL_MS: '20' };
  const run = spawnSync('npx', ['cdk', 'synth', '--quiet', '--no-notices', '-o', out], {
    env: { ...env, ...leftover, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (run.status !== 0) throw new Error(`cdk synth failed (${run.status}):\n${run.stdout}\n${run.stderr}`);
  synthOutput = run.stderr;
  json = JSON.parse(readFileSync(join(out, 'Leasehold.template.json'), 'utf8'));
  template = Template.fromJSON(json);
  report = JSON.parse(readFileSync(join(out, 'validation-report.json'), 'utf8'));
}, 120_000);

describe('cdk synth and cdk-nag', () => {
  it('AwsSolutions checks pass with zero unacknowledged findings; each acknowledgement names its rule and a reason', () => {
    const nag = report.pluginReports.find((p) => p.pluginName === 'AwsSolutions')!;
    expect(nag.conclusion).toBe('success');
    expect(nag.violations).toEqual([]);
    expect([...new Set(nag.suppressedViolations.map((v) => v.ruleName.replace(/\[.*$/, '')))].sort()).toEqual(
      ['AwsSolutions-IAM5', 'AwsSolutions-L1', 'AwsSolutions-SQS3'],
    );
    // The wildcard acknowledged is only the Scheduler's right to invoke a function's versions.
    expect(
      nag.suppressedViolations
        .filter((v) => v.ruleName.startsWith('AwsSolutions-IAM5'))
        .map((v) => v.ruleName)
        .sort(),
    ).toEqual([
      expect.stringMatching(/^AwsSolutions-IAM5\[Resource::<RecoveryFunction\w+\.Arn>:\*\]$/),
      expect.stringMatching(/^AwsSolutions-IAM5\[Resource::<WorkerFunction\w+\.Arn>:\*\]$/),
      expect.stringMatching(
        /^AwsSolutions-IAM5\[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule\/Leasehold-UserSchedules-Group-\w+\/\*\]$/,
      ),
    ]);
    expect(nag.suppressedViolations.every((v) => v.reason.length > 40)).toBe(true);
  });

  it('the checks can fail: a table without point-in-time recovery stops synthesis', () => {
    const app = new App();
    const stack = new Stack(app, 'Bad');
    new Table(stack, 'T', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      removalPolicy: RemovalPolicy.DESTROY,
    });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).toThrow(/Point-in-time Recovery/i);
  });
});

describe('the table', () => {
  it('is on-demand, keyed and indexed exactly as the layout module says', () => {
    const [, table] = resources('AWS::DynamoDB::GlobalTable')[0]!;
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
    expect(table.Properties.KeySchema).toEqual([
      { AttributeName: KEY.partition, KeyType: 'HASH' },
      { AttributeName: KEY.sort, KeyType: 'RANGE' },
    ]);
    const gsis = table.Properties.GlobalSecondaryIndexes as {
      IndexName: string;
      KeySchema: unknown;
      Projection: unknown;
    }[];
    expect(gsis.map((g) => g.IndexName).sort()).toEqual(
      Object.values(INDEX)
        .map((i) => i.name)
        .sort(),
    );
    for (const ix of Object.values(INDEX)) {
      const g = gsis.find((x) => x.IndexName === ix.name)!;
      expect(g.KeySchema).toEqual([
        { AttributeName: ix.partition, KeyType: 'HASH' },
        { AttributeName: ix.sort, KeyType: 'RANGE' },
      ]);
      expect(g.Projection).toEqual(
        'include' in ix
          ? { ProjectionType: 'INCLUDE', NonKeyAttributes: [...ix.include] }
          : { ProjectionType: 'KEYS_ONLY' },
      );
    }
    expect(table.Properties.AttributeDefinitions).toEqual(
      expect.arrayContaining(
        Object.values(INDEX).map((ix) => ({ AttributeName: ix.sort, AttributeType: ix.sortType })),
      ),
    );
    expect(table.Properties.TimeToLiveSpecification).toEqual({ AttributeName: TTL_ATTRIBUTE, Enabled: true });
  });

  it('has point-in-time recovery, deletion protection and a customer-managed key with rotation', () => {
    const [, table] = resources('AWS::DynamoDB::GlobalTable')[0]!;
    const replica = table.Properties.Replicas[0];
    expect(replica.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(replica.DeletionProtectionEnabled).toBe(true);
    expect(replica.SSESpecification.KMSMasterKeyId).toEqual({
      'Fn::GetAtt': [expect.stringMatching(/^TasksKey/), 'Arn'],
    });
    expect(table.Properties.SSESpecification).toEqual({ SSEEnabled: true, SSEType: 'KMS' });
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    template.hasResource('AWS::KMS::Key', { DeletionPolicy: 'Retain' });
  });
});

describe('the functions', () => {
  const config = defineConfig();
  const sizing = sizeFunctions(config);

  it('are ARM64 Node 22 without source maps unless asked, sized from the config, with the config as environment', () => {
    const fns = resources('AWS::Lambda::Function');
    expect(fns).toHaveLength(4);
    for (const [, fn] of fns) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
      });
      expect(fn.Properties.Environment.Variables).toMatchObject({
        ...lambdaEnvironment(config),
        LEASEHOLD_TABLE: { Ref: expect.any(String) },
      });
      // Maps only with -c leasehold:sourceMaps=true (review 2, LOW-3: three quarters of each zip).
      expect(fn.Properties.Environment.Variables.NODE_OPTIONS).toBeUndefined();
      expect(fn.Properties.LoggingConfig.LogGroup).toBeDefined();
    }
    const byName = (name: string) => fns.find(([id]) => id.startsWith(name))![1].Properties;
    expect(byName('Worker')).toMatchObject({
      Timeout: sizing.workerTimeoutMs / 1000,
      MemorySize: sizing.workerMemoryMb,
    });
    expect(sizing).toMatchObject({ workerTimeoutMs: 380_000, overlappingWorkers: 7 });
    // Reserved concurrency is opt-in (leasehold:workerReservedConcurrency): on a young account it fails the deploy.
    for (const [, fn] of fns) expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
    // The worker's fleet chains invocations on purpose and bounds them itself (fleet-rules.ts); the
    // others keep Lambda's loop detection.
    expect(byName('Worker').RecursiveLoop).toBe('Allow');
    for (const name of ['Api', 'Recovery', 'Fire']) expect(byName(name).RecursiveLoop).toBeUndefined();
    expect(byName('Recovery')).toMatchObject({ Timeout: 60 });
    expect(byName('Api')).toMatchObject({ Timeout: 10 });
  });

  it('each role lists exactly the DynamoDB actions its function uses, on the table and the indexes it uses, and nothing with *', () => {
    for (const name of ['Api', 'Worker', 'Recovery', 'Fire'] as const) {
      const [, role] = resources('AWS::IAM::Role').find(([id]) => id.startsWith(`${name}Role`))!;
      const statements = role.Properties.Policies[0].PolicyDocument.Statement as {
        Sid: string;
        Action: string | string[];
        Resource: unknown;
        Condition?: unknown;
      }[];
      const access = FUNCTION_ACCESS[name.toLowerCase() as FunctionName];
      const dynamo = statements.filter((s) => [s.Action].flat().some((a) => a.startsWith('dynamodb:')));
      expect(dynamo.find((s) => s.Sid === 'TaskItems')!.Action).toEqual(access.table);
      // The worker runs task handlers: its item actions are held to its own partitions (review 2, LOW-4).
      expect(dynamo.find((s) => s.Sid === 'TaskItems')!.Condition).toEqual(
        name === 'Worker'
          ? {
              'ForAllValues:StringLike': {
                'dynamodb:LeadingKeys': [
                  'TASK#*',
                  'FLEET',
                  'LIMIT#*',
                  'RATE#*',
                  'GROUP#*',
                  'QUEUE',
                  'STATS#*',
                  'LOCK#*',
                ],
              },
              Null: { 'dynamodb:LeadingKeys': 'false' },
            }
          : undefined,
      );
      expect(dynamo.find((s) => s.Sid === 'TaskItems')!.Resource).toEqual({
        'Fn::GetAtt': [expect.stringMatching(/^TasksTable/), 'Arn'],
      });
      for (const [index, actions] of Object.entries(access.indexes)) {
        const s = dynamo.find((x) => JSON.stringify(x.Resource).includes(`/index/${index}`))!;
        expect([s.Action].flat()).toEqual(actions);
      }
      // The worker reads the type controls in a statement of its own: a handler cannot pause a type.
      const readOnly = dynamo.find((s) => s.Sid === 'ReadOnlyItems');
      expect(readOnly && { Action: readOnly.Action, Condition: readOnly.Condition }).toEqual(
        name === 'Worker'
          ? {
              Action: ['dynamodb:GetItem', 'dynamodb:Query'],
              Condition: {
                'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['TYPES'] },
                Null: { 'dynamodb:LeadingKeys': 'false' },
              },
            }
          : undefined,
      );
      expect(dynamo).toHaveLength((readOnly ? 2 : 1) + Object.keys(access.indexes).length);
      // The table's key: kms:Decrypt alone, what DynamoDB uses as the caller (review 2, LOW-4).
      expect([statements.find((s) => s.Sid === 'TableKey')!.Action].flat()).toEqual(['kms:Decrypt']);
      expect(JSON.stringify(statements)).not.toMatch(/kms:(Encrypt|GenerateDataKey|DescribeKey|\*)/);
      const all = JSON.stringify(statements);
      expect(all).not.toMatch(/dynamodb:Scan|dynamodb:\*|"\*"/);
      // Only the API deletes anything: a schedule definition.
      if (name !== 'Api') expect(all).not.toContain('dynamodb:DeleteItem');
    }
    // The worker puts a handler's children (flows), held like every item action to its partitions.
    expect(FUNCTION_ACCESS.worker.table).toContain('dynamodb:PutItem');
    expect(FUNCTION_ACCESS.worker.leadingKeys).not.toContain('SCHEDULES#*');
  });

  it('the API may manage schedules in the user-schedule group only, and pass only the Scheduler’s invoke role', () => {
    const [, policy] = resources('AWS::IAM::Policy').find(([id]) => id.startsWith('ApiRoleDefaultPolicy'))!;
    const statements = policy.Properties.PolicyDocument.Statement as {
      Sid: string;
      Action: string | string[];
      Resource: any;
      Condition?: unknown;
    }[];
    const manage = statements.find((x) => x.Sid === 'ManageUserSchedules')!;
    expect(manage.Action).toEqual(SCHEDULE_MANAGEMENT_ACTIONS);
    expect(JSON.stringify(manage.Resource)).toMatch(/:schedule\/Leasehold-UserSchedules-Group-\w+\/\*/);
    const pass = statements.find((x) => x.Sid === 'PassSchedulerRole')!;
    expect(pass).toMatchObject({
      Action: 'iam:PassRole',
      Resource: { 'Fn::GetAtt': [expect.stringMatching(/^UserSchedulesInvokeRole/), 'Arn'] },
      Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
    });
    // The kick on enqueue: the API may start the worker function, and nothing else.
    const start = statements.find((x) => x.Sid === 'StartWorker')!;
    expect(start).toMatchObject({
      Action: 'lambda:InvokeFunction',
      Resource: { 'Fn::GetAtt': [expect.stringMatching(/^Worker/), 'Arn'] },
    });
    expect(statements).toHaveLength(3);
    const api = resources('AWS::Lambda::Function').find(([id]) => id.startsWith('Api'))![1].Properties
      .Environment.Variables;
    expect(Object.keys(api)).toEqual(
      expect.arrayContaining([
        'LEASEHOLD_SCHEDULE_GROUP',
        'LEASEHOLD_SCHEDULER_ROLE_ARN',
        'LEASEHOLD_FIRE_FUNCTION_ARN',
        'LEASEHOLD_SCHEDULE_DLQ_ARN',
      ]),
    );
    const [, invokePolicy] = resources('AWS::IAM::Policy').find(([id]) =>
      id.startsWith('UserSchedulesInvokeRoleDefaultPolicy'),
    )!;
    expect(invokePolicy.Properties.PolicyDocument.Statement.map((x: { Action: string }) => x.Action)).toEqual(
      ['lambda:InvokeFunction', 'sqs:SendMessage'],
    );
    template.resourceCountIs('AWS::Scheduler::ScheduleGroup', 2);
  });

  it('the API, the fire function and recovery know the worker to kick, and the worker may start only itself', () => {
    const fnEnv = (prefix: string) =>
      resources('AWS::Lambda::Function').find(([id]) => id.startsWith(prefix))![1].Properties.Environment
        .Variables;
    for (const starter of ['Api', 'Fire', 'Recovery'])
      expect(fnEnv(starter).LEASEHOLD_WORKER_FUNCTION_ARN).toEqual({
        'Fn::GetAtt': [expect.stringMatching(/^Worker/), 'Arn'],
      });
    // The worker starts more of itself by name: its own ARN in its environment would be a cycle.
    expect(fnEnv('Worker').LEASEHOLD_WORKER_FUNCTION_ARN).toBeUndefined();
    expect(fnEnv('Worker').LEASEHOLD_WORKER_MAX_CONCURRENCY).toBe('10');
    const [, own] = resources('AWS::IAM::Policy').find(([id]) => id.startsWith('WorkerStartsWorkers'))!;
    expect(own.Properties.PolicyDocument.Statement).toEqual([
      {
        Sid: 'StartWorker',
        Effect: 'Allow',
        Action: 'lambda:InvokeFunction',
        Resource: { 'Fn::GetAtt': [expect.stringMatching(/^Worker/), 'Arn'] },
      },
    ]);
    expect(own.Properties.Roles).toEqual([{ Ref: expect.stringMatching(/^WorkerRole/) }]);
  });

  it('bundles the pinned AWS SDK into each function instead of using the runtime copy', () => {
    const pinned = (
      JSON.parse(readFileSync('node_modules/@aws-sdk/client-dynamodb/package.json', 'utf8')) as {
        version: string;
      }
    ).version;
    const bundles = readdirSync(outDir)
      .filter((d) => d.startsWith('asset.'))
      .map((d) => readFileSync(join(outDir, d, 'index.js'), 'utf8'));
    expect(bundles).toHaveLength(4);
    // No source map shipped by default: not in the asset, not referenced by the code.
    for (const d of readdirSync(outDir).filter((d) => d.startsWith('asset.')))
      expect(readdirSync(join(outDir, d)).filter((f) => f.endsWith('.map'))).toEqual([]);
    for (const code of bundles) expect(code).not.toMatch(/sourceMappingURL/);
    for (const code of bundles) {
      expect(code).toContain('"DynamoDB_20120810"');
      expect(code).toContain(`version:"${pinned}"`);
    }
  });
});

describe('the HTTP API', () => {
  it('has every route of the handler, each with IAM authorization', () => {
    const routes = resources('AWS::ApiGatewayV2::Route').map(([, r]) => r.Properties);
    expect(routes.map((r) => r.RouteKey).sort()).toEqual(
      API_ROUTES.map((r) => `${r.method} ${r.path}`).sort(),
    );
    expect(routes.every((r) => r.AuthorizationType === 'AWS_IAM')).toBe(true);
  });

  it('throttles the default route and writes access logs', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 },
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('requestId') },
    });
  });
});

describe('the schedules', () => {
  it('run the worker every minute and recovery at the recovery interval, in their group, with retries, a maximum age and a DLQ', () => {
    const schedules = resources('AWS::Scheduler::Schedule').map(([, s]) => s.Properties);
    expect(schedules).toHaveLength(2);
    for (const s of schedules) {
      expect(s.ScheduleExpression).toBe('rate(1 minute)');
      expect(s.GroupName).toMatch(/Schedules-Group/);
      expect(s.Target.RetryPolicy).toEqual({
        MaximumEventAgeInSeconds: 60,
        MaximumRetryAttempts: expect.any(Number),
      });
      expect(s.Target.DeadLetterConfig.Arn).toEqual({
        'Fn::GetAtt': [expect.stringMatching(/^SchedulesDeadLetters/), 'Arn'],
      });
      expect(s.Target.Input).toContain('<aws.scheduler.scheduled-time>');
    }
  });

  it('the dead-letter queue is encrypted and TLS-only', () => {
    template.hasResourceProperties('AWS::SQS::Queue', { KmsMasterKeyId: 'alias/aws/sqs' });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });
});

describe('observability', () => {
  it('alarms at the thresholds docs/operations.md lists and on failures, dead letters, worker errors and throttles', () => {
    const alarms = Object.fromEntries(
      resources('AWS::CloudWatch::Alarm').map(([id, a]) => [
        id.replace(/^Monitoring/, '').replace(/[0-9A-F]{8}$/, ''),
        a.Properties,
      ]),
    );
    expect(Object.keys(alarms).sort()).toEqual([
      'ApiErrors',
      'ApiServerErrors',
      'ApiThrottles',
      'BacklogWithoutClaims',
      'ExpiredLeases',
      'FireErrors',
      'FireEventsDropped',
      'IndexDelaysThrottled',
      'IndexOwnerThrottled',
      'IndexReadyThrottled',
      'IndexSweepThrottled',
      'LeaseRenewalSuccess',
      'OldestDueTaskAge',
      'RecoveryErrors',
      'RecoveryEventsDropped',
      'RecoveryThrottles',
      'ScheduleDeadLetters',
      'SchedulerTargetErrors',
      'SchedulerTargetErrors2',
      'TableThrottled',
      'TaskFailureRate',
      'WorkerErrors',
      'WorkerEventsDropped',
      'WorkerInvocationsUnexplained',
      'WorkerRecursionsDropped',
      'WorkerThrottles',
    ]);
    // What stops work without a worker error (review 2, MEDIUM-3).
    expect(alarms.ApiServerErrors).toMatchObject({
      MetricName: '5xx',
      Namespace: 'AWS/ApiGateway',
      Threshold: 0,
    });
    expect(alarms.ApiThrottles).toMatchObject({ MetricName: 'Throttles', Namespace: 'AWS/Lambda' });
    for (const name of ['WorkerEventsDropped', 'RecoveryEventsDropped', 'FireEventsDropped'])
      expect(alarms[name]).toMatchObject({
        MetricName: 'AsyncEventsDropped',
        Namespace: 'AWS/Lambda',
        Threshold: 0,
      });
    expect(JSON.stringify(alarms.TableThrottled.Metrics)).toMatch(/ReadThrottleEvents.*WriteThrottleEvents/);
    for (const index of ['Owner', 'Ready', 'Sweep'])
      expect(alarms[`Index${index}Throttled`]).toMatchObject({
        MetricName: 'WriteThrottleEvents',
        Namespace: 'AWS/DynamoDB',
        Dimensions: expect.arrayContaining([
          { Name: 'GlobalSecondaryIndexName', Value: index.toLowerCase() },
        ]),
      });
    for (const name of ['SchedulerTargetErrors', 'SchedulerTargetErrors2'])
      expect(JSON.stringify(alarms[name].Metrics)).toMatch(
        /AWS\/Scheduler.*TargetErrorCount|TargetErrorCount.*AWS\/Scheduler/,
      );
    // A failed task pages only as a rate: at least 10 ended in 15 minutes, half or more FAILED.
    expect(alarms.TaskFailureRate).toMatchObject({
      Threshold: 0.5,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    expect(JSON.stringify(alarms.TaskFailureRate.Metrics)).toMatch(/TasksFailed/);
    expect(JSON.stringify(alarms.TaskFailureRate.Metrics)).toMatch(/>= 10/);
    // Cap 10, idle window 2 s: each seat cycles at most 30 times a minute, plus a bounce each and the tick.
    expect(alarms.WorkerInvocationsUnexplained).toMatchObject({
      MetricName: 'Invocations',
      Namespace: 'AWS/Lambda',
      Threshold: 10 * 30 + 10 + 1,
      EvaluationPeriods: 3,
    });
    expect(alarms.WorkerRecursionsDropped).toMatchObject({
      MetricName: 'RecursiveInvocationsDropped',
      Namespace: 'AWS/Lambda',
      Threshold: 0,
    });
    expect(alarms.OldestDueTaskAge).toMatchObject({
      MetricName: 'OldestDueAgeMs',
      Threshold: 300_000,
      Statistic: 'Maximum',
      EvaluationPeriods: 3,
    });
    expect(alarms.BacklogWithoutClaims).toMatchObject({
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 5,
    });
    expect(JSON.stringify(alarms.BacklogWithoutClaims.Metrics)).toMatch(
      /ReadyTasks.*Claims|Claims.*ReadyTasks/,
    );
    expect(alarms.LeaseRenewalSuccess).toMatchObject({
      Threshold: 0.99,
      ComparisonOperator: 'LessThanThreshold',
      EvaluationPeriods: 5,
    });
    expect(JSON.stringify(alarms.LeaseRenewalSuccess.Metrics)).toContain('LeaseRenewalsOk');
    expect(
      alarms.LeaseRenewalSuccess.Metrics.find((m: { Id: string }) => m.Id === 'ok').MetricStat.Period,
    ).toBe(60);
    expect(alarms.ExpiredLeases).toMatchObject({
      Threshold: 10,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 1,
    });
    expect(
      alarms.ExpiredLeases.Metrics.find((m: { Id: string }) => m.Id === 'requeued').MetricStat.Period,
    ).toBe(300);
    // Every alarm notifies: the topic the parameter names, else the stack's own (never nobody).
    const topic = resources('AWS::SNS::Topic').map(([id]) => id);
    expect(topic).toHaveLength(1);
    for (const a of Object.values(alarms))
      expect(a.AlarmActions).toEqual([
        { 'Fn::If': [expect.stringMatching(/NotifyTopic/), { Ref: 'AlarmTopicArn' }, { Ref: topic[0] }] },
      ]);
    template.hasParameter('AlarmTopicArn', { Type: 'String', Default: '' });
    // Only over TLS.
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny' })]) },
    });
  });

  it('has a dashboard, log groups with retention, and the outputs', () => {
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const body = JSON.stringify(resources('AWS::CloudWatch::Dashboard')[0]![1].Properties.DashboardBody);
    for (const title of ['Queue depth', 'Throughput', 'Task duration', 'Lease health', 'Event-loop lag'])
      expect(body).toContain(title);
    const logs = resources('AWS::Logs::LogGroup');
    expect(logs).toHaveLength(5);
    expect(logs.every(([, l]) => l.Properties.RetentionInDays === 30)).toBe(true);
    expect(Object.keys(json.Outputs).sort()).toEqual([
      'AlarmTopic',
      'ApiUrl',
      'DashboardUrl',
      'TableArn',
      'TableKeyArn',
      'TableName',
      'WorkerFunctionName',
    ]);
  });

  it("the API's bundle serves the OpenAPI document of its routes and task types, generated at synth and copied beside it", () => {
    const api = resources('AWS::Lambda::Function').find(([, f]) =>
      String(f.Properties.Description).startsWith('Leasehold HTTP API'),
    );
    const key = (api![1].Properties.Code as { S3Key: string }).S3Key;
    const dir = join(outDir, `asset.${key.replace(/\.zip$/, '')}`);
    // The bundle as Lambda loads it (CommonJS), with its environment, in its task root.
    expect(readdirSync(dir).sort()).toEqual(['index.js', 'openapi.json']);
    const event = apiEvent({ method: 'GET', path: '/openapi.json', caller: null });
    const run = spawnSync(
      process.execPath,
      [
        '-e',
        `require(${JSON.stringify(join(dir, 'index.js'))}).handler(${JSON.stringify(event)}).then((r) => process.stdout.write(r.body))`,
      ],
      {
        encoding: 'utf8',
        env: {
          ...api![1].Properties.Environment.Variables,
          ...CONCRETE_ENV,
          PATH: process.env.PATH,
          LAMBDA_TASK_ROOT: dir,
        },
      },
    );
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual(JSON.parse(readFileSync('docs/openapi.json', 'utf8')));
  });
});

describe('deployment settings come from CDK context, never the shell', () => {
  it('synth prints the settings, names the shell variables it ignored, and the functions get the defaults', () => {
    expect(synthOutput).toMatch(/Leasehold settings for stack Leasehold/);
    expect(synthOutput).toMatch(/pollIntervalMs\s+1000/);
    expect(synthOutput).toMatch(
      /ignored from your shell \(set them as context instead\): LEASEHOLD_POLL_INTERVAL_MS/,
    );
    for (const [, fn] of resources('AWS::Lambda::Function'))
      expect(fn.Properties.Environment.Variables.LEASEHOLD_POLL_INTERVAL_MS).toBe('1000');
  });

  it('reads leasehold:<setting> context keys, checks them with the config rules, and names the context key in every problem', () => {
    const context = (values: Record<string, unknown>) =>
      readDeploymentSettings((k) => values[k], Object.keys(values));
    const set = context({
      'leasehold:maxExecutionMs': '600000',
      'leasehold:workerConcurrency': 16,
      'leasehold:workerReservedConcurrency': '12',
    });
    expect(set.config).toMatchObject({ maxExecutionMs: 600_000, workerConcurrency: 16 });
    expect(set).toMatchObject({ stackName: 'Leasehold', workerReservedConcurrency: 12 });
    expect(context({}).workerReservedConcurrency).toBeUndefined();
    expect(context({}).sourceMaps).toBe(false);
    expect(context({}).peakStartsPerSecond).toBeUndefined();
    expect(context({ 'leasehold:peakStartsPerSecond': '2000' }).peakStartsPerSecond).toBe(2000);
    expect(() => context({ 'leasehold:peakStartsPerSecond': '0' })).toThrow(
      /leasehold:peakStartsPerSecond: must be a whole number of task starts a second/,
    );
    expect(context({ 'leasehold:sourceMaps': 'true' }).sourceMaps).toBe(true);
    expect(() => context({ 'leasehold:sourceMaps': 'yes' })).toThrow(
      /leasehold:sourceMaps: must be true or false/,
    );
    // Below the fleet's cap plus the tick and a kick (10 + 2 by default), the fleet would throttle itself.
    expect(() => context({ 'leasehold:workerReservedConcurrency': '11' })).toThrow(
      /workerReservedConcurrency: must be at least 12 \(workerMaxConcurrency 10 \+ 2/,
    );
    expect(
      context({ 'leasehold:workerReservedConcurrency': '5', 'leasehold:workerMaxConcurrency': '3' })
        .workerReservedConcurrency,
    ).toBe(5);
    const bad = () =>
      context({
        'leasehold:pollIntervalMs': 'soon',
        'leasehold:heartbeatIntervalMs': '40000',
        'leasehold:port': '80',
        'leasehold:workerReservedConcurrency': '0',
      });
    expect(bad).toThrow(ConfigError);
    const problems = (() => {
      try {
        bad();
      } catch (error) {
        return (error as ConfigError).problems.map((p) => p.path);
      }
      return [];
    })();
    expect(problems).toEqual(
      expect.arrayContaining([
        'leasehold:port',
        'leasehold:pollIntervalMs',
        'leasehold:workerReservedConcurrency',
      ]),
    );
    expect(() => context({ 'leasehold:heartbeatIntervalMs': '40000' })).toThrow(
      /leasehold:heartbeatIntervalMs: heartbeat interval 40000 ms must be less than half the lease timeout/,
    );
  });
});

describe('asynchronous invocation (Scheduler invokes Lambda asynchronously)', () => {
  it('worker and recovery are not retried and drop a tick older than a minute; a failed user-schedule tick is retried, then sent to the dead-letter queue', () => {
    const configs = resources('AWS::Lambda::EventInvokeConfig').map(([, c]) => c.Properties);
    const of = (fn: string) => configs.find((c) => JSON.stringify(c.FunctionName).includes(`${fn}Function`))!;
    expect(configs).toHaveLength(3);
    expect(of('Worker')).toMatchObject({
      Qualifier: '$LATEST',
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 60,
    });
    expect(of('Recovery')).toMatchObject({
      Qualifier: '$LATEST',
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 60,
    });
    expect(of('Fire')).toMatchObject({ MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 3600 });
    expect(of('Fire').DestinationConfig.OnFailure.Destination).toEqual({
      'Fn::GetAtt': [expect.stringMatching(/^SchedulesDeadLetters/), 'Arn'],
    });
    expect(of('Api')).toBeUndefined();
  });
});

describe('grants without routine use', () => {
  it('each reason names an action a role of the stack grants (no reason outlives its grant)', () => {
    const granted = JSON.stringify(
      [...resources('AWS::IAM::Role'), ...resources('AWS::IAM::Policy')].map(([, r]) => r.Properties),
    );
    for (const key of Object.keys(GRANTS_WITHOUT_ROUTINE_USE))
      expect({ key, granted: granted.includes(`"${key.slice(key.indexOf(':') + 1)}"`) }).toEqual({
        key,
        granted: true,
      });
    expect(grantHasReason('Leasehold-WorkerRoleAAEB1603-177JY88', 'dynamodb:GetItem')).toBe(true);
    expect(grantHasReason('Leasehold-ApiRoleDE7A08EC-0SYXM34', 'dynamodb:GetItem')).toBe(false);
    expect(grantHasReason('Leasehold-ApiRoleDE7A08EC-0SYXM34', 'logs:PutLogEvents')).toBe(true);
  });
});

describe('the catalog at synth', () => {
  it('refuses a task type whose timeout the deployment cannot run (demo.report asks for 4 minutes)', () => {
    const app = new App();
    expect(
      () => new LeaseholdStack(app, 'TooShort', { config: defineConfig({ maxExecutionMs: 120_000 }) }),
    ).toThrow(/task demo\.report: timeoutMs 240000 exceeds LEASEHOLD_MAX_EXECUTION_MS \(120000 ms\)/);
  });
});

describe('sizing rules (pure)', () => {
  it('derives the worker timeout from the maximum execution time plus the drain margin, and refuses more than Lambda allows', () => {
    expect(sizeFunctions(defineConfig({ maxExecutionMs: 120_000 }))).toMatchObject({
      workerTimeoutMs: 200_000,
      overlappingWorkers: 4,
    });
    expect(sizeFunctions(defineConfig({ workerConcurrency: 64 })).workerMemoryMb).toBe(640);
    expect(() => sizeFunctions(defineConfig({ maxExecutionMs: 890_000 }))).toThrow(
      /over Lambda's 900000 ms limit: lower the maximum execution time to at most 820000 ms/,
    );
  });
});

describe('the region (review 2, LOW-7)', () => {
  it('the template is made for the region the deployer’s AWS settings name, not a fixed one', () => {
    // The main synth has no AWS settings at all: the CDK CLI then assumes us-east-1. With AWS_REGION set,
    // every region in the template is that one (the API's invoke permissions, the table's replica).
    const out = mkdtempSync(join(tmpdir(), 'cdk-out-region-'));
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_') && !k.startsWith('LEASEHOLD_')),
    );
    const run = spawnSync('npx', ['cdk', 'synth', '--quiet', '--no-notices', '-o', out], {
      env: { ...env, AWS_REGION: 'eu-west-1', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const text = readFileSync(join(out, 'Leasehold.template.json'), 'utf8');
    expect(text).toContain('execute-api:eu-west-1');
    expect(text).toMatch(/"Region": "eu-west-1"/);
    expect(text).not.toContain('us-east-1');
  }, 120_000);
});

describe('capacity (review 2, MEDIUM-4)', () => {
  it("a default table is not pre-warmed (a one-time charge): a new table's 4,000 writes a second", () => {
    const tables = resources('AWS::DynamoDB::GlobalTable');
    expect(tables).toHaveLength(1);
    expect(tables[0]![1].Properties.WarmThroughput).toBeUndefined();
  });

  it('-c leasehold:peakStartsPerSecond sizes warm throughput: 3.5 table writes, 2 ready, 2.5 lease and 2 delay writes a start, never below the new-table floor', () => {
    expect(warmThroughputFor(2_000)).toEqual({
      table: { writeUnitsPerSecond: 7_000, readUnitsPerSecond: 12_000 },
      indexes: {
        ready: { writeUnitsPerSecond: 4_000, readUnitsPerSecond: 12_000 },
        sweep: { writeUnitsPerSecond: 5_000, readUnitsPerSecond: 12_000 },
        delays: { writeUnitsPerSecond: 4_000, readUnitsPerSecond: 12_000 },
        owner: { writeUnitsPerSecond: 4_000, readUnitsPerSecond: 12_000 },
      },
    });
    expect(warmThroughputFor(10).table.writeUnitsPerSecond).toBe(4_000);
    // The table takes more writes than any index, so a burst its indexes hold back leaves it room for leases.
    const warm = warmThroughputFor(5_000);
    for (const index of Object.values(warm.indexes))
      expect(index.writeUnitsPerSecond).toBeLessThan(warm.table.writeUnitsPerSecond);
  });

  it('delays and leases are two indexes (MEDIUM-4): a delayed-enqueue burst that throttles `delays` cannot throttle a claim or a renewal', () => {
    const [, table] = resources('AWS::DynamoDB::GlobalTable')[0]!;
    const gsis = Object.fromEntries(
      (
        table.Properties.GlobalSecondaryIndexes as {
          IndexName: string;
          KeySchema: { AttributeName: string }[];
          Projection: { ProjectionType: string };
        }[]
      ).map((g) => [
        g.IndexName,
        { keys: g.KeySchema.map((k) => k.AttributeName), projection: g.Projection.ProjectionType },
      ]),
    );
    // The lease index keeps its deployed name and keys (a table updates in place: one index added).
    expect(gsis.sweep).toEqual({ keys: ['sweepPk', 'sweepAt'], projection: 'KEYS_ONLY' });
    expect(gsis.delays).toEqual({ keys: ['delayPk', 'delayAt'], projection: 'KEYS_ONLY' });
    // Each function queries only what it reads: the worker's timekeeper the delays; the API's running list
    // the leases, and GET /types both (its running and delayed counts).
    expect(Object.keys(FUNCTION_ACCESS.worker.indexes).sort()).toEqual(['delays', 'ready']);
    expect(Object.keys(FUNCTION_ACCESS.api.indexes).sort()).toEqual(['delays', 'owner', 'sweep']);
    expect(Object.keys(FUNCTION_ACCESS.recovery.indexes).sort()).toEqual(['delays', 'ready', 'sweep']);
  });
});
