/**
 * `leasehold sim`: what `cdk deploy` would create, run on this machine from what `cdk synth` wrote.
 * DynamoDB is Amazon's DynamoDB Local behind an IAM gate, the functions run from their assets in
 * frozen-between-invocations execution environments, EventBridge Scheduler fires the template's
 * schedules and the ones the API creates, and the HTTP API checks SigV4 and routes as API Gateway.
 * Development tooling: nothing in the production core imports it.
 */
import { CreateTableCommand, DynamoDBClient, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { join, resolve } from 'node:path';
import { API_ROUTES } from '../../shared/api/api-handler.js';
import { directClientPolicy } from '../../shared/client/direct-policy.js';
import { startDynalite } from '../local/dynalite.js';
import { untilTableActive } from '../../shared/store/table-setup.js';
import { startAdminServer } from './admin-server.js';
import { DynamoDbLocalUnavailableError, startDynamoDbLocal } from './dynamodb/dynamodb-local.js';
import { startIamGate } from './dynamodb/iam-gate.js';
import { createTableInputFrom, tableKmsKey, warmThroughputOf } from './dynamodb/table-from-template.js';
import { functionsFromTemplate } from './functions-from-template.js';
import { startGateway } from './http-api/gateway.js';
import { AccessLog } from './iam/access-log.js';
import { IdentityStore, type SimPrincipal } from './iam/identity-store.js';
import { layOutFunctionRoots } from './lambda/function-root.js';
import { startInvokeServer } from './lambda/invoke-server.js';
import { LambdaService } from './lambda/lambda-service.js';
import { httpApisFromTemplate } from './routes-from-template.js';
import { startSchedulerFromTemplate, type SimScheduler } from './scheduler-from-template.js';
import { LocalQueues } from './sqs/local-queues.js';
import { loadCloudAssembly, resourcesOfType } from './template/cloud-assembly.js';
import { TemplateResolver } from './template/resolver.js';
import type { SimInfo } from './sim-info.js';

export type { SimCaller, SimInfo } from './sim-info.js';

export interface SimOptions {
  /** Where sim.json, logs and queue messages go. */
  dataDir: string;
  /** A cloud assembly already synthesized; default: run `cdk synth` into <dataDir>/cdk.out. */
  assemblyDir?: string;
  /** CDK context for the synth (`leasehold:<setting>` keys), as `cdk deploy -c` would get. */
  context?: Record<string, string>;
  region?: string;
  accountId?: string;
  apiPort?: number;
  /** The account's Lambda concurrency quota (1,000 by default; a young account may have 10). */
  accountConcurrency?: number;
  idleEnvironmentTtlMs?: number;
  /** Invocations of one chain before Lambda's recursive loop detection stops the next (16, as Lambda). */
  recursionLimit?: number;
  /** Each execution environment gets the CPU share of its memory, 1,769 MB = one vCPU (default true). */
  cpuLimit?: boolean;
  /** dynamodb-local (default; dynalite when java is missing) or dynalite. */
  dynamodb?: 'dynamodb-local' | 'dynalite';
  /** GSI propagation lag, drawn per write (default 50-500 ms); false (or maxMs 0): GSIs current at once. */
  indexLag?: { minMs: number; maxMs: number } | false;
  /** Scale of DynamoDB's on-demand throughput limits (default 1; 0.01 makes them 40/120/10/30 a second; 0: off). */
  throttleScale?: number;
  /** TTL deletes up to maxDelayMs after expiry, a sweep every sweepEveryMs (default 5 min, 10 s); false: none. */
  ttl?: { maxDelayMs: number; sweepEveryMs: number } | false;
  log?: (line: string) => void;
}

export interface RunningSim {
  info: SimInfo;
  close(): Promise<void>;
}

const freePort = () =>
  new Promise<number>((resolvePort) => {
    const s = createNetServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolvePort(port));
    });
  });

/** `cdk synth` as a user runs it, with the sim's context; the shell's AWS and LEASEHOLD variables left out. */
export function synthesize(outDir: string, context: Record<string, string> = {}, cwd = process.cwd()): void {
  rmSync(outDir, { recursive: true, force: true });
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_') && !k.startsWith('LEASEHOLD_')),
  );
  const args = [
    'cdk',
    'synth',
    '--quiet',
    '--no-notices',
    '-o',
    outDir,
    ...Object.entries(context).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
  ];
  const run = spawnSync('npx', args, {
    cwd,
    env: { ...env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    encoding: 'utf8',
    timeout: 300_000,
  });
  if (run.status !== 0)
    throw new Error(`cdk synth failed (exit ${run.status}):\n${run.stdout}\n${run.stderr}`);
}

export async function startSim(options: SimOptions): Promise<RunningSim> {
  const started = Date.now();
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const dataDir = resolve(options.dataDir);
  const notices: string[] = [];
  const notice = (line: string) => {
    notices.push(line);
    log(`notice: ${line}`);
  };
  mkdirSync(join(dataDir, 'logs'), { recursive: true });
  const closers: (() => Promise<void> | void)[] = [];
  const closeAll = async () => {
    for (const c of closers.reverse()) await Promise.resolve(c()).catch(() => undefined);
  };
  try {
    const assemblyDir = options.assemblyDir ?? join(dataDir, 'cdk.out');
    if (!options.assemblyDir) {
      log('cdk synth ...');
      synthesize(assemblyDir, options.context);
    }
    const assembly = loadCloudAssembly(assemblyDir);
    const region = options.region ?? 'us-east-1';
    const accountId = options.accountId ?? '123456789012';
    const apiPort = options.apiPort ?? (await freePort());
    const resolver = new TemplateResolver(assembly.template, {
      stackName: assembly.stackName,
      region,
      accountId,
      apiEndpoint: () => `http://127.0.0.1:${apiPort}`,
    });
    const identities = new IdentityStore(resolver, accountId);
    identities.warnings.forEach(notice);
    const accessLog = new AccessLog();

    // DynamoDB: the template's tables, behind the IAM gate.
    let backend: { endpoint: string; version: string; name: string; close(): Promise<void> };
    if (options.dynamodb !== 'dynalite') {
      try {
        const server = await startDynamoDbLocal({});
        backend = { ...server, name: 'DynamoDB Local' };
      } catch (error) {
        if (!(error instanceof DynamoDbLocalUnavailableError)) throw error;
        notice(
          `DynamoDB Local cannot run: ${error.message}; falling back to dynalite, which differs from DynamoDB (no transactions, lenient validation)`,
        );
        backend = { ...(await startDynalite()), version: 'dynalite 4', name: 'dynalite' };
      }
    } else backend = { ...(await startDynalite()), version: 'dynalite 4', name: 'dynalite' };
    closers.push(() => backend.close());
    const admin = new DynamoDBClient({
      endpoint: backend.endpoint,
      region,
      credentials: { accessKeyId: 'sim', secretAccessKey: 'sim' },
    });
    const tables = [];
    for (const [logicalId, r] of [
      ...resourcesOfType(assembly.template, 'AWS::DynamoDB::GlobalTable'),
      ...resourcesOfType(assembly.template, 'AWS::DynamoDB::Table'),
    ]) {
      const props = resolver.resolve<
        Parameters<typeof createTableInputFrom>[1] & {
          TimeToLiveSpecification?: { AttributeName: string; Enabled: boolean };
        }
      >(r.Properties);
      const { ref: name, attributes } = resolver.resource(logicalId);
      await admin.send(new CreateTableCommand(createTableInputFrom(name, props)));
      await untilTableActive(admin, name);
      if (props.TimeToLiveSpecification?.Enabled) {
        await admin
          .send(
            new UpdateTimeToLiveCommand({
              TableName: name,
              TimeToLiveSpecification: props.TimeToLiveSpecification,
            }),
          )
          .catch(() => notice(`${backend.name} does not take the TTL setting of ${name}`));
      }
      const kmsKeyArn = tableKmsKey(props);
      const ttlAttribute = props.TimeToLiveSpecification?.Enabled
        ? props.TimeToLiveSpecification.AttributeName
        : undefined;
      const warm = warmThroughputOf(name, props);
      tables.push({
        name,
        arn: attributes.Arn!,
        ...(warm.size > 0 ? { warm } : {}),
        ...(kmsKeyArn ? { kmsKeyArn } : {}),
        ...(ttlAttribute ? { ttlAttribute } : {}),
      });
    }
    admin.destroy();
    // The gate makes the emulator as strict as DynamoDB: GSIs lag, on-demand limits throttle, TTL deletes.
    const gate = await startIamGate({
      backend: backend.endpoint,
      region,
      tables,
      identities,
      log: accessLog,
      ...(options.indexLag !== undefined ? { indexLag: options.indexLag } : {}),
      ...(options.throttleScale !== undefined ? { throttleScale: options.throttleScale } : {}),
      ...(options.ttl !== undefined ? { ttl: options.ttl } : {}),
    });
    const strictness = gate.stats();
    if (!strictness.indexLag.enabled) notice("GSIs do not lag (--index-lag 0); DynamoDB's do");
    if (strictness.throttled.scale <= 0) notice('DynamoDB throttling is off (--throttle-scale 0)');
    if (!strictness.ttl.enabled) notice("items are not expired by TTL (--ttl-delay off); DynamoDB's are");
    closers.push(() => gate.close());

    const queues = new LocalQueues(
      resourcesOfType(assembly.template, 'AWS::SQS::Queue').map(([id]) => ({
        arn: resolver.resource(id).attributes.Arn!,
        name: resolver.resource(id).attributes.QueueName!,
      })),
      join(dataDir, 'queues'),
      identities,
      accessLog,
    );

    // Lambda's Invoke API: up before the functions are defined (their environment names its endpoint),
    // it reaches the LambdaService created below only once a request arrives.
    const invokeServer = await startInvokeServer({
      region,
      accountId,
      identities,
      log: accessLog,
      lambda: {
        invoke: (...args) => lambda.invoke(...args),
        invokeAsync: (...args) => lambda.invokeAsync(...args),
        definitions: () => lambda.definitions(),
      },
    });
    closers.push(() => invokeServer.close());

    // Functions; their logs go to <dataDir>/logs/<logicalId>.log.
    const logFile = (logicalId: string) => join(dataDir, 'logs', `${logicalId}.log`);
    const schedulerPort = await freePort();
    const definitions = functionsFromTemplate(
      assembly,
      resolver,
      {
        dynamodb: gate.endpoint,
        scheduler: `http://127.0.0.1:${schedulerPort}`,
        lambda: invokeServer.endpoint,
      },
      (id) => (line) => appendFileSync(logFile(id), `${line}\n`),
      notice,
    );
    // Each function runs from a copy of its asset with no package.json or node_modules of the
    // project above it, as on Lambda (see function-root.ts), wherever the data dir is.
    const roots = layOutFunctionRoots(
      definitions.map((d) => ({ logicalId: d.logicalId, assetDir: d.taskRoot })),
    );
    closers.push(() => roots.remove());
    roots.warnings.forEach(notice);
    for (const d of definitions) d.taskRoot = roots.taskRoot(d.logicalId);
    const lambda = new LambdaService({
      functions: definitions,
      identities,
      log: accessLog,
      accountConcurrency: options.accountConcurrency ?? 1000,
      idleEnvironmentTtlMs: options.idleEnvironmentTtlMs ?? 10 * 60_000,
      ...(options.recursionLimit !== undefined ? { recursionLimit: options.recursionLimit } : {}),
      cpuLimit: options.cpuLimit ?? true,
      destinations: async (destination, functionArn, record) => {
        const fn = definitions.find((d) => d.arn === functionArn)!;
        const sender = identities.assumeRole(fn.roleArn, fn.name);
        if (destination.startsWith('arn:aws:sqs:')) return queues.send(destination, sender.arn, record);
        if (destination.startsWith('arn:aws:lambda:'))
          return void lambda.invokeAsync(destination, record, { principalArn: sender.arn });
        notice(`destination ${destination} is not simulated; the record was: ${record}`);
      },
    });
    closers.push(() => lambda.close());

    const scheduler: SimScheduler = await startSchedulerFromTemplate({
      template: assembly.template,
      resolver,
      identities,
      lambda,
      queues,
      accessLog,
      port: schedulerPort,
      region,
      accountId,
    });
    closers.push(() => scheduler.close());

    const [api, ...more] = httpApisFromTemplate(assembly.template, resolver);
    if (!api) throw new Error('the template has no HTTP API');
    if (more.length > 0) notice(`only the first HTTP API (${api.logicalId}) is served`);
    const accessLogFile = join(dataDir, 'logs', 'api-access.log');
    const gateway = await startGateway({
      ...api,
      region,
      accountId,
      identities,
      lambda,
      log: accessLog,
      port: apiPort,
      // A request answered while the sim shuts down (its data dir may be gone) must not crash it.
      accessLog: (entry) => {
        try {
          appendFileSync(accessLogFile, `${JSON.stringify(entry)}\n`);
        } catch (error) {
          log(`access log not written: ${(error as Error).message}`);
        }
      },
    });
    closers.push(() => gateway.close());

    // Local callers who may sign API requests (written to sim.json with their keys).
    // A caller's policy names routes as the construct's grants do: every route but the operators'
    // (pause, resume) for producers; those two for the operator.
    const apiArn = `arn:aws:execute-api:${region}:${accountId}:${api.apiId}`;
    const routeArns = (operator: boolean) =>
      API_ROUTES.filter((r) => (r.operator === true) === operator).map(
        (r) => `${apiArn}/*/${r.method}${r.path.replace(/\{[^}]+\}/g, '*')}`,
      );
    const invokeRoutes = (operator: boolean) => [
      {
        Statement: [
          { Effect: 'Allow' as const, Action: 'execute-api:Invoke', Resource: routeArns(operator) },
        ],
      },
    ];
    const callers: SimPrincipal[] = [
      identities.addCaller('admin', `arn:aws:iam::${accountId}:user/sim-admin`, [
        { Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }] },
      ]),
      identities.addCaller(
        'producer',
        `arn:aws:sts::${accountId}:assumed-role/sim-producer/session-1`,
        invokeRoutes(false),
      ),
      // Another session of the same role: the API treats a role's sessions as one owner.
      identities.addCaller(
        'producer-session-2',
        `arn:aws:sts::${accountId}:assumed-role/sim-producer/session-2`,
        invokeRoutes(false),
      ),
      identities.addCaller('other', `arn:aws:iam::${accountId}:user/sim-other`, invokeRoutes(false)),
      // May pause and resume task types, and nothing else (the construct's grantOperate).
      identities.addCaller('operator', `arn:aws:iam::${accountId}:user/sim-operator`, invokeRoutes(true)),
      identities.addCaller('no-access', `arn:aws:iam::${accountId}:user/sim-no-access`, []),
      // A direct client's role with the narrowest policy the docs give it (shared/client/direct-policy.ts).
      identities.addCaller('direct-producer', `arn:aws:iam::${accountId}:role/sim-direct-producer`, [
        directClientPolicy({
          tableArn: tables[0]!.arn,
          ...(tables[0]!.kmsKeyArn ? { tableKeyArn: tables[0]!.kmsKeyArn } : {}),
          owner: `arn:aws:iam::${accountId}:role/sim-direct-producer`,
          workerFunctionArn: workerFunction(definitions).arn,
        }),
      ]),
    ];

    const info: SimInfo = {
      apiUrl: gateway.url,
      adminUrl: '',
      region,
      accountId,
      stackName: assembly.stackName,
      dynamodb: {
        backend: backend.name,
        version: backend.version,
        endpoint: backend.endpoint,
        gatedEndpoint: gate.endpoint,
        tables: tables.map((t) => t.name),
      },
      schedulerEndpoint: scheduler.endpoint,
      lambdaEndpoint: invokeServer.endpoint,
      functions: definitions.map((d) => ({
        logicalId: d.logicalId,
        name: d.name,
        arn: d.arn,
        node: d.nodePath,
        logFile: logFile(d.logicalId),
      })),
      callers: callers.map((c) => ({
        name: c.name,
        arn: c.arn,
        accessKeyId: c.credentials.accessKeyId,
        secretAccessKey: c.credentials.secretAccessKey,
        ...(c.credentials.sessionToken ? { sessionToken: c.credentials.sessionToken } : {}),
      })),
      queues: queues.list().map(({ name, arn, file }) => ({ name, arn, file })),
      notices,
      startedAt: new Date(started).toISOString(),
      startupMs: 0,
    };
    const adminServer = await startAdminServer({
      info,
      lambda,
      accessLog,
      identities,
      scheduler,
      queues,
      dynamodb: gate,
    });
    closers.push(() => adminServer.close());
    info.adminUrl = adminServer.url;
    scheduler.start();
    info.startupMs = Date.now() - started;
    writeFileSync(join(dataDir, 'sim.json'), `${JSON.stringify(info, null, 2)}\n`);
    return { info, close: closeAll };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/**
 * The worker function of a Leasehold stack, found by the service name its construct gives it (its
 * logical id is `Worker...` in the reference app, `<construct id>Worker...` in a user's stack).
 */
function workerFunction<T extends { logicalId: string; environment: Record<string, string> }>(
  definitions: T[],
): T {
  const worker = definitions.find((d) => d.environment.POWERTOOLS_SERVICE_NAME === 'leasehold-worker');
  if (!worker)
    throw new Error(
      `no Leasehold worker function in the template (${definitions.map((d) => d.logicalId).join(', ')})`,
    );
  return worker;
}
