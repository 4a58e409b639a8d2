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
import { startDynalite } from '../shared/local/dynalite.js';
import { startAdminServer } from './admin-server.js';
import { JavaUnavailableError, startDynamoDbLocal } from './dynamodb/dynamodb-local.js';
import { startIamGate } from './dynamodb/iam-gate.js';
import { createTableInputFrom, tableKmsKey } from './dynamodb/table-from-template.js';
import { functionsFromTemplate } from './functions-from-template.js';
import { startGateway } from './http-api/gateway.js';
import { AccessLog } from './iam/access-log.js';
import { IdentityStore, type SimPrincipal } from './iam/identity-store.js';
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
  /** dynamodb-local (default; dynalite when java is missing) or dynalite. */
  dynamodb?: 'dynamodb-local' | 'dynalite';
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
        if (!(error instanceof JavaUnavailableError)) throw error;
        notice(
          `DynamoDB Local needs Java 17 (${error.message}); falling back to dynalite, which differs from DynamoDB (no transactions, lenient validation)`,
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
      tables.push({ name, arn: attributes.Arn!, ...(kmsKeyArn ? { kmsKeyArn } : {}) });
    }
    admin.destroy();
    notice(`${backend.name} does not expire items by TTL and its indexes never lag; DynamoDB's do`);
    const gate = await startIamGate({
      backend: backend.endpoint,
      region,
      tables,
      identities,
      log: accessLog,
    });
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
    const lambda = new LambdaService({
      functions: definitions,
      identities,
      log: accessLog,
      accountConcurrency: options.accountConcurrency ?? 1000,
      idleEnvironmentTtlMs: options.idleEnvironmentTtlMs ?? 10 * 60_000,
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
      accessLog: (entry) => appendFileSync(accessLogFile, `${JSON.stringify(entry)}\n`),
    });
    closers.push(() => gateway.close());

    // Local callers who may sign API requests (written to sim.json with their keys).
    const apiArn = `arn:aws:execute-api:${region}:${accountId}:${api.apiId}/*`;
    const callers: SimPrincipal[] = [
      identities.addCaller('admin', `arn:aws:iam::${accountId}:user/sim-admin`, [
        { Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }] },
      ]),
      identities.addCaller('producer', `arn:aws:sts::${accountId}:assumed-role/sim-producer/session-1`, [
        { Statement: [{ Effect: 'Allow', Action: 'execute-api:Invoke', Resource: apiArn }] },
      ]),
      // Another session of the same role: the API treats a role's sessions as one owner.
      identities.addCaller(
        'producer-session-2',
        `arn:aws:sts::${accountId}:assumed-role/sim-producer/session-2`,
        [{ Statement: [{ Effect: 'Allow', Action: 'execute-api:Invoke', Resource: apiArn }] }],
      ),
      identities.addCaller('other', `arn:aws:iam::${accountId}:user/sim-other`, [
        { Statement: [{ Effect: 'Allow', Action: 'execute-api:Invoke', Resource: apiArn }] },
      ]),
      identities.addCaller('no-access', `arn:aws:iam::${accountId}:user/sim-no-access`, []),
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
    const adminServer = await startAdminServer({ info, lambda, accessLog, identities, scheduler, queues });
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
