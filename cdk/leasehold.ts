/**
 * The Leasehold construct: everything a task queue needs in a stack (the table, the worker, recovery,
 * fire and API functions bundled with the deployment's own task module, their schedules, the HTTP API
 * with IAM authorization, the alarms and the dashboard). `new Leasehold(this, 'Tasks', { tasks:
 * 'src/tasks.ts' })`. Two in one stack or app share nothing (no resource has a fixed name, and each
 * has its own generated entries).
 */
import { Aws, Duration, Stack, Token, Validations } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import type { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, Policy, PolicyStatement, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct, type IConstruct } from 'constructs';
import { dirname } from 'node:path';
import { defineConfig, type ConfigInput, type LeaseholdConfig } from '../shared/config.js';
import { ConfigError } from '../shared/errors.js';
import { explainedInvocationsPerMinute } from '../shared/fleet/fleet-rules.js';
import { TaskRegistry } from '../shared/tasks/registry.js';
import type { TaskDefinition } from '../shared/tasks/define.js';
import { INDEX } from '../shared/table-layout.js';
import { API_ROUTES } from '../shared/api/api-handler.js';
import { nagResourceText } from './nag-resource.js';
import { deployableSettings } from './deployment-settings.js';
import { FUNCTION_ACCESS } from './function-access.js';
import {
  entriesFolder,
  findProject,
  taskModulePath,
  writeFunctionEntries,
  type FunctionName,
} from './function-entries.js';
import { writeOpenApiDocument } from './openapi-document.js';
import { OPENAPI_ASSET } from '../shared/api/openapi-file.js';
import { LeaseholdHttpApi } from './http-api.js';
import { lambdaEnvironment } from './lambda-env.js';
import { LeaseholdFunction } from './leasehold-function.js';
import { METRICS_NAMESPACE, Monitoring } from './monitoring.js';
import { acknowledgeFindings } from './nag-acknowledgements.js';
import { LeaseholdSchedules } from './schedules.js';
import { sizeFunctions } from './sizing.js';
import { TaskTable } from './task-table.js';
import { UserSchedules } from './user-schedules.js';

export interface LeaseholdProps {
  /**
   * The module that exports `taskDefinitions` (an array of `defineTask(...)`), JavaScript or
   * TypeScript: relative to the CDK app's working directory (as NodejsFunction's `entry` is), or
   * absolute. It is bundled into every function.
   */
  tasks: string;
  /**
   * The same module's `taskDefinitions`, when the app imports them: then a type the deployment cannot
   * run as declared (a timeout past the worker's) fails the synth instead of being refused at run time.
   */
  taskDefinitions?: TaskDefinition[];
  /** The settings (docs/operations.md, "Deployment settings"): the protocol's and the worker's. Default: the defaults. */
  config?: ConfigInput | LeaseholdConfig;
  /** Default: one month. */
  logRetention?: RetentionDays;
  /** The HTTP API's default stage throttle. Default: 100 requests a second, bursts of 200. */
  apiThrottle?: { rateLimit: number; burstLimit: number };
  /** Opt-in (default none): a reservation fails `cdk deploy` on an account whose quota cannot keep 100 unreserved. */
  workerReservedConcurrency?: number;
  /** Source maps in the bundles, enabled (default off: they cost every cold start). */
  sourceMaps?: boolean;
  /** Warm throughput for this peak of task starts a second (table and indexes; docs/operations.md). */
  peakStartsPerSecond?: number;
  /**
   * Where esbuild runs and the generated entries are written (under node_modules/.cache/leasehold).
   * Default: the nearest folder at or above the working directory with a lock file, as NodejsFunction's.
   */
  projectRoot?: string;
  /** Default: that folder's lock file. */
  depsLockFilePath?: string;
  /**
   * The CloudWatch namespace of the functions' own metrics, which the alarms and the dashboard read.
   * Default: `Leasehold/<construct path>` (`Leasehold` under the id `Default`), one per deployment:
   * under one namespace two deployments' metrics would mix, and one's claims could hide the other's
   * stuck queue. Two in one app on one namespace fail the synth.
   */
  metricsNamespace?: string;
}

/** The routes `grantEnqueue` allows: adding tasks, one, a batch or a flow. */
const ENQUEUE_ROUTES = API_ROUTES.filter(
  (r) => r.method === 'POST' && /^\/(tasks(\/batch)?|flows)$/.test(r.path),
);
/** The routes `grantRead` allows: every GET (tasks, types, stats, schedules, the OpenAPI document). */
const READ_ROUTES = API_ROUTES.filter((r) => r.method === 'GET');
/** The routes `grantOperate` allows: pause and resume a task type (every caller's tasks of it). */
const OPERATOR_ROUTES = API_ROUTES.filter((r) => r.operator);

export class Leasehold extends Construct {
  readonly config: LeaseholdConfig;
  readonly taskTable: TaskTable;
  /** The task table (DynamoDB, customer-managed KMS key). */
  readonly table: TableV2;
  readonly functions: Record<FunctionName, LeaseholdFunction>;
  readonly httpApi: LeaseholdHttpApi;
  /** The HTTP API (IAM authorization on every route). */
  readonly api: HttpApi;
  readonly schedules: LeaseholdSchedules;
  readonly userSchedules: UserSchedules;
  readonly monitoring: Monitoring;

  constructor(scope: Construct, id: string, props: LeaseholdProps) {
    super(scope, id);
    // Only the settings a deployment carries (the protocol's and the worker's); a whole LeaseholdConfig
    // (as readDeploymentSettings gives) is taken too, its local-stack settings left out.
    const config = (this.config = defineConfig(deployableOf(props.config ?? {})));
    // A task type the deployment cannot run as declared is refused here, before anything is deployed.
    if (props.taskDefinitions) {
      const { warnings } = new TaskRegistry(props.taskDefinitions, config);
      if (warnings.length > 0)
        throw new ConfigError(warnings.map((message) => ({ path: props.tasks, message })));
    }
    // The table's customer-managed key is set per replica, and CloudFormation needs its region.
    if (Token.isUnresolved(Stack.of(this).region))
      throw new ConfigError([
        {
          path: 'stack env',
          message: `Leasehold needs a stack with a region (its table's key is per region): new Stack(app, '${Stack.of(this).stackName}', { env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION } })`,
        },
      ]);
    // Checked here: a bad setting fails the synth with every problem listed (ConfigError).
    const cwd = process.cwd();
    const tasksPath = taskModulePath(props.tasks, cwd);
    const place = projectPlace(props, cwd);
    const generated = entriesFolder(place.projectRoot, this.node.addr);
    const entries = writeFunctionEntries(generated, tasksPath);
    const openApiDocument = writeOpenApiDocument(generated, tasksPath);
    const metricsNamespace = props.metricsNamespace ?? defaultNamespace(this);
    claimNamespace(this, metricsNamespace);
    const sizing = sizeFunctions(config);
    const environment = lambdaEnvironment(config);
    const logRetention = props.logRetention ?? RetentionDays.ONE_MONTH;
    this.taskTable = new TaskTable(this, 'Tasks', { peakStartsPerSecond: props.peakStartsPerSecond });
    this.table = this.taskTable.table;

    const fn = (
      name: FunctionName,
      description: string,
      timeoutMs: number,
      memorySize: number,
      options: {
        reserved?: number | undefined;
        allowRecursiveLoop?: boolean;
        files?: Record<string, string>;
      } = {},
    ) =>
      new LeaseholdFunction(this, `${name[0]!.toUpperCase()}${name.slice(1)}`, {
        name,
        entry: entries[name],
        projectRoot: place.projectRoot,
        depsLockFilePath: place.depsLockFilePath,
        metricsNamespace,
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
        ...(options.files ? { files: options.files } : {}),
        ...(props.sourceMaps ? { sourceMaps: true } : {}),
      });
    this.functions = {
      api: fn('api', 'Leasehold HTTP API', sizing.apiTimeoutMs, sizing.apiMemoryMb, {
        files: { [openApiDocument]: OPENAPI_ASSET },
      }),
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
    this.api = this.httpApi.api;
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
    for (const f of [this.functions.worker.fn, this.functions.recovery.fn])
      f.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });
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
      metricsNamespace,
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
    acknowledgeFindings(this);
  }

  /** The API's base URL (`https://<id>.execute-api.<region>.amazonaws.com/`). */
  get apiUrl(): string {
    return this.httpApi.url;
  }

  /** The worker, API, recovery and fire functions. */
  get lambdas(): Record<FunctionName, NodejsFunction> {
    const { api, worker, recovery, fire } = this.functions;
    return { api: api.fn, worker: worker.fn, recovery: recovery.fn, fire: fire.fn };
  }

  /** Lets `grantee` enqueue through the API (POST /tasks, /tasks/batch and /flows, SigV4-signed). */
  grantEnqueue(grantee: IGrantable): Grant {
    return this.grantRoutes(grantee, ENQUEUE_ROUTES);
  }

  /** Lets `grantee` read through the API: every GET (its own tasks, stats, schedules). */
  grantRead(grantee: IGrantable): Grant {
    return this.grantRoutes(grantee, READ_ROUTES);
  }

  /**
   * Lets `grantee` pause and resume task types (POST /types/{type}/pause and /resume): an operator's
   * grant, apart from grantEnqueue and grantRead, since a pause stops every caller's tasks of the type.
   */
  grantOperate(grantee: IGrantable): Grant {
    return this.grantRoutes(grantee, OPERATOR_ROUTES);
  }

  private grantRoutes(grantee: IGrantable, routes: readonly { method: string; path: string }[]): Grant {
    // A route with a path parameter (`/tasks/{id}`) is every id: `*` in the ARN, which cdk-nag's
    // IAM5 reports; each such route is acknowledged by its exact resource, nothing broader.
    const arns = routes.map((r) =>
      this.api.arnForExecuteApi(r.method, r.path.replace(/\{[^}]+\}/g, '*'), '$default'),
    );
    for (const arn of arns.filter((a, i) => routes[i]!.path.includes('{')))
      Validations.of(Stack.of(this)).acknowledge({
        id: `AwsSolutions::AwsSolutions-IAM5[Resource::${nagResourceText(this, arn)}]`,
        reason:
          'A route with a path parameter (a task id, a schedule name, a task type): the grant is that route for any value; the API checks the caller owns the task or schedule, and a type route is an operator’s.',
      });
    return Grant.addToPrincipal({ grantee, actions: ['execute-api:Invoke'], resourceArns: arns });
  }

  /**
   * Who may start a worker invocation besides the scheduled tick: the API and the fire function kick
   * one when a task arrives (LEASEHOLD_WORKER_FUNCTION_ARN), recovery when its sweep readied tasks
   * (requeued, promoted), and a saturated worker starts more of itself by its own name. The worker's
   * grant is a policy of its own: in the role's default policy, a statement naming the function's ARN
   * would make the function depend on itself.
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

function deployableOf(config: ConfigInput | LeaseholdConfig): ConfigInput {
  const values = config as Record<string, unknown>;
  return Object.fromEntries(
    deployableSettings()
      .filter((key) => values[key] !== undefined)
      .map((key) => [key, values[key]]),
  ) as ConfigInput;
}

/** The metrics namespaces the Leaseholds of each app write to, and which construct took each. */
const NAMESPACES = new WeakMap<IConstruct, Map<string, string>>();

/**
 * `Leasehold` for this repository's stack (the id `Default`: its alarms keep their metrics), else one
 * per construct path (`Leasehold/Greetings/Tasks`), so two deployments in one account never share one.
 * CloudWatch takes letters, digits and `.-_/#: ` in a namespace, at most 255 characters.
 */
function defaultNamespace(construct: Construct): string {
  if (construct.node.id === 'Default') return METRICS_NAMESPACE;
  return `${METRICS_NAMESPACE}/${construct.node.path}`.replace(/[^A-Za-z0-9.\-_/#: ]/g, '_').slice(0, 255);
}

function claimNamespace(construct: Construct, namespace: string): void {
  const root = construct.node.root;
  const taken = NAMESPACES.get(root) ?? new Map<string, string>();
  NAMESPACES.set(root, taken);
  const other = taken.get(namespace);
  if (other)
    throw new ConfigError([
      {
        path: 'metricsNamespace',
        message: `${other} writes its metrics to the namespace ${namespace} already: give ${construct.node.path} a metricsNamespace of its own (its alarms would read the other's metrics)`,
      },
    ]);
  taken.set(namespace, construct.node.path);
}

/**
 * Where esbuild runs: as given; a lock file alone gives its folder; a root alone is kept, with the lock
 * file found at or above it; neither: NodejsFunction's own rule from the working directory.
 */
function projectPlace(props: LeaseholdProps, cwd: string): { projectRoot: string; depsLockFilePath: string } {
  const { projectRoot, depsLockFilePath } = props;
  if (depsLockFilePath !== undefined)
    return { projectRoot: projectRoot ?? dirname(depsLockFilePath), depsLockFilePath };
  const found = findProject(projectRoot ?? cwd);
  return { projectRoot: projectRoot ?? found.projectRoot, depsLockFilePath: found.depsLockFilePath };
}
