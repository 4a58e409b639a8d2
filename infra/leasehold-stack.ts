/** Everything Leasehold needs in an AWS account: `npx cdk deploy`. */
import { Aws, CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { Policy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { defineConfig, type LeaseholdConfig } from '../shared/config.js';
import { ConfigError } from '../shared/errors.js';
import { taskDefinitions } from '../tasks/catalog.js';
import { TaskRegistry } from '../shared/tasks/registry.js';
import { INDEX } from '../shared/table-layout.js';
import { LeaseholdHttpApi } from './http-api.js';
import { lambdaEnvironment } from './lambda-env.js';
import { LeaseholdFunction, type TableAccess } from './leasehold-function.js';
import { Monitoring } from './monitoring.js';
import { LeaseholdSchedules } from './schedules.js';
import { sizeFunctions } from './sizing.js';
import { TaskTable } from './task-table.js';
import { UserSchedules } from './user-schedules.js';
import { explainedInvocationsPerMinute } from '../shared/fleet/fleet-rules.js';

export interface LeaseholdStackProps extends StackProps {
  /** Default: the defaults (the app reads CDK context: infra/deployment-settings.ts). Never the synth shell's environment. */
  config?: LeaseholdConfig;
  logRetention?: RetentionDays;
  apiThrottle?: { rateLimit: number; burstLimit: number };
  /** Opt-in (default none): a reservation fails `cdk deploy` on an account whose quota cannot keep 100 unreserved. */
  workerReservedConcurrency?: number;
  /** Source maps in the bundles, enabled (default off: infra/leasehold-function.ts says why). */
  sourceMaps?: boolean;
  /** Warm throughput for this peak of task starts a second (infra/task-table.ts). */
  peakStartsPerSecond?: number;
}

/** Exactly the DynamoDB actions each function's code uses (see shared/store/). */
/**
 * What the worker's item actions touch: tasks and their bodies (`TASK#<id>`), the fleet's seats
 * (`FLEET`), concurrency slots (`LIMIT#...`), the queue summary (`QUEUE`), the owners' outcome counters
 * (`STATS#<owner>`), and locks (`LOCK#<key>`, the library a handler may use).
 */
export const WORKER_PARTITIONS = ['TASK#*', 'FLEET', 'LIMIT#*', 'QUEUE', 'STATS#*', 'LOCK#*'];

export const FUNCTION_ACCESS: Record<FunctionName, TableAccess> = {
  // enqueue (put, read-back), get, cancel, retry, list (owner index + batch read); schedule
  // definitions and fires (query their partitions, put, update the sync state, delete a definition);
  // GET /stats (the queue summary, the lease index + batch read, the caller's
  // outcome counters) and the counters' flush after a cancel (UpdateItem)
  api: {
    table: [
      'dynamodb:BatchGetItem',
      'dynamodb:DeleteItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ],
    indexes: { [INDEX.owner.name]: ['dynamodb:Query'], [INDEX.lease.name]: ['dynamodb:Query'] },
  },
  // claim (ready heads, slot and fleet-seat partitions on the table), lease writes, read-backs, a
  // payload kept apart (read at claim) and a result or error kept apart (an UpdateItem that creates
  // its item, so the worker needs no PutItem: shared/store/body-layout.ts); the
  // timekeeper (seat 0) reads the delay index and promotes what falls due
  // Task handlers run inside the worker with this role (docs/security.md): its item actions are held to
  // the partitions the worker itself uses (review 2, LOW-4), so a handler cannot touch schedule
  // definitions or fires.
  worker: {
    table: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
    indexes: { [INDEX.ready.name]: ['dynamodb:Query'], [INDEX.delay.name]: ['dynamodb:Query'] },
    leadingKeys: WORKER_PARTITIONS,
  },
  // sweep (lease and delay indexes + batch read), fixes and promotions, queue-depth counts (ready index)
  recovery: {
    table: ['dynamodb:BatchGetItem', 'dynamodb:UpdateItem'],
    indexes: {
      [INDEX.lease.name]: ['dynamodb:Query'],
      [INDEX.delay.name]: ['dynamodb:Query'],
      [INDEX.ready.name]: ['dynamodb:Query'],
    },
  },
  // a schedule tick: read the definition, enqueue (put, read-back), record the fire, mark a one-time
  // schedule's definition completed (UpdateItem: the sim's IAM gate found it missing). A fire's task is
  // due at once, and a due task's kick reads no seats (fleet/enqueue-kicker.ts): no Query.
  fire: {
    table: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
    indexes: {},
  },
};

export type FunctionName = 'api' | 'worker' | 'recovery' | 'fire';

export class LeaseholdStack extends Stack {
  readonly taskTable: TaskTable;
  readonly functions: Record<FunctionName, LeaseholdFunction>;
  readonly userSchedules: UserSchedules;
  readonly httpApi: LeaseholdHttpApi;
  readonly schedules: LeaseholdSchedules;
  readonly monitoring: Monitoring;

  constructor(scope: Construct, id: string, props: LeaseholdStackProps = {}) {
    super(scope, id, props);
    const config = props.config ?? defineConfig();
    // A task type the deployment cannot run as declared is refused here, before anything is deployed.
    const { warnings } = new TaskRegistry(taskDefinitions, config);
    if (warnings.length > 0)
      throw new ConfigError(warnings.map((message) => ({ path: 'tasks/catalog.ts', message })));
    const sizing = sizeFunctions(config);
    const environment = lambdaEnvironment(config);
    const logRetention = props.logRetention ?? RetentionDays.ONE_MONTH;
    this.taskTable = new TaskTable(this, 'Tasks', { peakStartsPerSecond: props.peakStartsPerSecond });

    const fn = (
      name: FunctionName,
      description: string,
      timeoutMs: number,
      memorySize: number,
      options: { reserved?: number | undefined; allowRecursiveLoop?: boolean } = {},
    ) =>
      new LeaseholdFunction(this, `${name[0]!.toUpperCase()}${name.slice(1)}`, {
        entry: name,
        description,
        timeout: Duration.millis(timeoutMs),
        memorySize,
        environment: {
          ...environment,
          LEASEHOLD_REGION: Aws.REGION,
          POWERTOOLS_SERVICE_NAME: `leasehold-${name}`,
        },
        taskTable: this.taskTable,
        access: FUNCTION_ACCESS[name],
        logRetention,
        ...(options.reserved === undefined ? {} : { reservedConcurrentExecutions: options.reserved }),
        ...(options.allowRecursiveLoop ? { allowRecursiveLoop: true } : {}),
        ...(props.sourceMaps ? { sourceMaps: true } : {}),
      });
    this.functions = {
      api: fn('api', 'Leasehold HTTP API', sizing.apiTimeoutMs, sizing.apiMemoryMb),
      worker: fn(
        'worker',
        'Leasehold worker: claims, runs and renews tasks',
        sizing.workerTimeoutMs,
        sizing.workerMemoryMb,
        // Its fleet starts more of itself on purpose, chains bounded by the seats (fleet-rules.ts).
        { reserved: props.workerReservedConcurrency, allowRecursiveLoop: true },
      ),
      recovery: fn(
        'recovery',
        'Leasehold recovery: expired leases and due delayed tasks',
        sizing.recoveryTimeoutMs,
        sizing.recoveryMemoryMb,
      ),
      fire: fn(
        'fire',
        'Leasehold schedule tick: enqueues the schedule task once per tick',
        sizing.apiTimeoutMs,
        sizing.apiMemoryMb,
      ),
    };

    this.httpApi = new LeaseholdHttpApi(this, 'Http', {
      handler: this.functions.api.fn,
      throttle: props.apiThrottle ?? { rateLimit: 100, burstLimit: 200 },
      logRetention,
    });
    this.schedules = new LeaseholdSchedules(this, 'Schedules', {
      worker: this.functions.worker.fn,
      recovery: this.functions.recovery.fn,
      recoveryIntervalMs: config.recoveryIntervalMs,
    });
    this.userSchedules = new UserSchedules(this, 'UserSchedules', {
      api: this.functions.api.fn,
      fire: this.functions.fire.fn,
      deadLetters: this.schedules.deadLetters,
    });
    // EventBridge Scheduler invokes Lambda asynchronously, so Lambda's async settings decide what happens
    // to a tick whose function fails or is throttled (its defaults: 2 retries over up to 6 hours).
    // A worker or recovery run is worth nothing late or twice: the next minute's tick does the same work.
    for (const fn of [this.functions.worker.fn, this.functions.recovery.fn])
      fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });
    // A user schedule's tick is work someone asked for: retried (a fire is idempotent per tick), then kept
    // in the dead-letter queue with the event and the error, where the ScheduleDeadLetters alarm sees it.
    this.functions.fire.fn.configureAsyncInvoke({
      retryAttempts: 2,
      maxEventAge: Duration.hours(1),
      onFailure: new SqsDestination(this.schedules.deadLetters),
    });
    this.wireWorkerStarts();
    const scheduleEnvironment = {
      LEASEHOLD_SCHEDULE_GROUP: this.userSchedules.group.scheduleGroupName,
      LEASEHOLD_SCHEDULER_ROLE_ARN: this.userSchedules.invokeRole.roleArn,
      LEASEHOLD_FIRE_FUNCTION_ARN: this.functions.fire.fn.functionArn,
      LEASEHOLD_SCHEDULE_DLQ_ARN: this.schedules.deadLetters.queueArn,
    };
    for (const [k, v] of Object.entries(scheduleEnvironment)) this.functions.api.fn.addEnvironment(k, v);

    this.monitoring = new Monitoring(this, 'Monitoring', {
      fire: this.functions.fire.fn,
      worker: this.functions.worker.fn,
      recovery: this.functions.recovery.fn,
      api: this.functions.api.fn,
      deadLetters: this.schedules.deadLetters,
      httpApi: this.httpApi.api,
      table: {
        tableName: this.taskTable.table.tableName,
        indexNames: Object.values(INDEX).map((i) => i.name),
      },
      scheduleGroups: [this.schedules.group.scheduleGroupName, this.userSchedules.group.scheduleGroupName],
      workerInvocationsPerMinute: explainedInvocationsPerMinute(
        config.workerMaxConcurrency,
        config.idleStopMs,
      ),
    });

    new CfnOutput(this, 'ApiUrl', {
      value: this.httpApi.url,
      description: 'Base URL of the HTTP API (sign requests with SigV4, service execute-api)',
    });
    new CfnOutput(this, 'TableName', { value: this.taskTable.table.tableName });
    new CfnOutput(this, 'TableArn', {
      value: this.taskTable.table.tableArn,
      description: 'The task table: directClientPolicy({ tableArn, ... }) for a direct client',
    });
    new CfnOutput(this, 'WorkerFunctionName', {
      value: this.functions.worker.fn.functionName,
      description:
        "The worker function: a direct client's workerFunctionName, and where the worker's logs are",
    });
    new CfnOutput(this, 'TableKeyArn', {
      value: this.taskTable.key.keyArn,
      description:
        "The task table's KMS key: direct clients (leasehold/client/direct) need kms:Decrypt on it",
    });
    new CfnOutput(this, 'AlarmTopic', {
      value: this.monitoring.topicArn,
      description: 'The topic the alarms notify: subscribe an address or a chat integration to it',
    });
    new CfnOutput(this, 'DashboardUrl', {
      value: `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards:name=${this.monitoring.dashboard.dashboardName}`,
    });
  }

  /**
   * Who may start a worker invocation besides the scheduled tick: the API and the fire function kick
   * one when a task arrives (LEASEHOLD_WORKER_FUNCTION_ARN), recovery when its sweep readied tasks
   * (requeued, promoted), and a saturated worker starts more of
   * itself by its own name. The worker's grant is a policy of its own: in the role's default policy,
   * a statement naming the function's ARN would make the function depend on itself.
   */
  private wireWorkerStarts(): void {
    const worker = this.functions.worker.fn;
    const invokeWorker = () =>
      new PolicyStatement({
        sid: 'StartWorker',
        actions: ['lambda:InvokeFunction'],
        resources: [worker.functionArn],
      });
    for (const starter of [this.functions.api.fn, this.functions.fire.fn, this.functions.recovery.fn]) {
      starter.addEnvironment('LEASEHOLD_WORKER_FUNCTION_ARN', worker.functionArn);
      starter.addToRolePolicy(invokeWorker());
    }
    new Policy(this, 'WorkerStartsWorkers', { statements: [invokeWorker()], roles: [worker.role!] });
  }
}
