/**
 * For the sim-lambda tests: a function bundle in a temporary task root, the real IdentityStore with a
 * function role from a template, FunctionDefinitions as functions-from-template.ts makes them, the
 * Invoke endpoint with a LambdaService behind it, and bare ExecutionEnvironments.
 */
import { LambdaClient } from '@aws-sdk/client-lambda';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { AccessLog } from '../../tools/sim/iam/access-log.js';
import { IdentityStore, type SimPrincipal } from '../../tools/sim/iam/identity-store.js';
import type { Credentials } from '../../tools/sim/iam/sigv4-verifier.js';
import { ExecutionEnvironment, type InvocationResult } from '../../tools/sim/lambda/execution-environment.js';
import { startInvokeServer, type InvokeServer } from '../../tools/sim/lambda/invoke-server.js';
import {
  LambdaService,
  type FunctionDefinition,
  type LambdaServiceOptions,
} from '../../tools/sim/lambda/lambda-service.js';
import { TemplateResolver } from '../../tools/sim/template/resolver.js';

export const REGION = 'us-east-1';
export const ACCOUNT = '123456789012';
export const arnOf = (name: string) => `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${name}`;
export const roleArnOf = (roleName: string) => `arn:aws:iam::${ACCOUNT}:role/${roleName}`;

/** The bundle source line that loads the real `@aws-sdk/client-lambda`, for a function that calls Invoke. */
export const requireLambdaSdk = `const { LambdaClient, InvokeCommand } = require(${JSON.stringify(
  createRequire(import.meta.url).resolve('@aws-sdk/client-lambda'),
)});`;

/** A new temporary task root whose `index.js` is `source`. */
export function writeBundle(prefix: string, source: string): string {
  const root = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(root, 'index.js'), source);
  return root;
}

/** The JSON lines a function appended to `file` (none yet: empty). */
export const jsonLines = <T>(file: string): T[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        // A file just created and not yet written reads empty.
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l) as T)
    : [];

/** A path in `root` that no other call answers (a file for one test's function to write). */
export const uniqueFile = (root: string, name: string, extension: string) =>
  join(root, `${name}-${Math.random().toString(36).slice(2)}${extension}`);

/**
 * The real IdentityStore over a template with one function role, as a template defines it: Lambda may
 * assume it, and it may invoke `invokes`. The store gives its sessions credentials.
 */
export function identitiesWithRole(role: {
  stackName: string;
  logicalId: string;
  roleName: string;
  invokes: string | string[];
}): IdentityStore {
  const template = {
    Resources: {
      [role.logicalId]: {
        Type: 'AWS::IAM::Role',
        Properties: {
          RoleName: role.roleName,
          AssumeRolePolicyDocument: {
            Statement: [
              { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
            ],
          },
          Policies: [
            {
              PolicyDocument: {
                Statement: [{ Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: role.invokes }],
              },
            },
          ],
        },
      },
    },
  };
  return new IdentityStore(
    new TemplateResolver(template, {
      stackName: role.stackName,
      region: REGION,
      accountId: ACCOUNT,
      apiEndpoint: () => 'http://127.0.0.1',
    }),
    ACCOUNT,
  );
}

/** An IAM user `name` whose one policy allows `action` on `resource`. */
export const addUser = (
  identities: IdentityStore,
  name: string,
  action: string,
  resource: string | string[],
): SimPrincipal =>
  identities.addCaller(name, `arn:aws:iam::${ACCOUNT}:user/${name}`, [
    { Statement: [{ Effect: 'Allow', Action: action, Resource: resource }] },
  ]);

/** A Node.js function running `index.handler` from `taskRoot` with the role `roleName`; `overrides` win. */
export const functionDefinition = (
  fn: { name: string; logicalId: string; taskRoot: string; roleName: string },
  overrides: Partial<FunctionDefinition> = {},
): FunctionDefinition => ({
  logicalId: fn.logicalId,
  name: fn.name,
  arn: arnOf(fn.name),
  handler: 'index.handler',
  runtime: 'nodejs22.x',
  taskRoot: fn.taskRoot,
  timeoutMs: 10_000,
  memoryMb: 256,
  reservedConcurrency: undefined,
  roleArn: roleArnOf(fn.roleName),
  nodePath: process.execPath,
  // What functions-from-template.ts sets: the region and where the SDK finds the sim's Lambda (set
  // once the Invoke endpoint has started).
  environment: {
    PATH: process.env.PATH ?? '',
    AWS_REGION: REGION,
    AWS_ENDPOINT_URL_LAMBDA: '',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  },
  asyncConfig: { maximumRetryAttempts: 0, maximumEventAgeMs: 60_000 },
  resourcePolicy: [],
  log: () => undefined,
  ...overrides,
});

/**
 * A function that invokes itself in a chain (loop detection's subject): 20 s to run, 512 MB, and its
 * failed events (a stopped hop among them) sent to `onFailure` without a retry.
 */
export const chainFunctionDefinition = (
  fn: { name: string; logicalId: string; taskRoot: string; roleName: string; onFailure: string },
  overrides: Partial<FunctionDefinition> = {},
): FunctionDefinition =>
  functionDefinition(fn, {
    timeoutMs: 20_000,
    memoryMb: 512,
    asyncConfig: { maximumRetryAttempts: 0, maximumEventAgeMs: 60_000, onFailure: fn.onFailure },
    ...overrides,
  });

/**
 * The Invoke endpoint and the LambdaService behind it, and SDK clients of the endpoint signed as `who`.
 * The server starts before the functions exist (their environment names its endpoint), as in the sim;
 * `service` adds to the service's options.
 */
export async function startInvokeStack(options: {
  definitions: FunctionDefinition[];
  identities: IdentityStore;
  log: AccessLog;
  service?: Partial<LambdaServiceOptions>;
}): Promise<{
  server: InvokeServer;
  lambda: LambdaService;
  client: (who: Credentials | SimPrincipal) => LambdaClient;
}> {
  const { definitions, identities, log } = options;
  let bound: LambdaService | undefined;
  const server = await startInvokeServer({
    region: REGION,
    accountId: ACCOUNT,
    identities,
    log,
    lambda: {
      invoke: (...args) => bound!.invoke(...args),
      invokeAsync: (...args) => bound!.invokeAsync(...args),
      definitions: () => bound!.definitions(),
    },
  });
  for (const d of definitions) d.environment.AWS_ENDPOINT_URL_LAMBDA = server.endpoint;
  const lambda = (bound = new LambdaService({
    functions: definitions,
    identities,
    log,
    accountConcurrency: 1000,
    idleEnvironmentTtlMs: 60_000,
    destinations: async () => undefined,
    ...options.service,
  }));
  const client = (who: Credentials | SimPrincipal) =>
    new LambdaClient({
      region: REGION,
      endpoint: server.endpoint,
      credentials: 'credentials' in who ? who.credentials : who,
      maxAttempts: 1,
    });
  return { server, lambda, client };
}

/**
 * Starts ExecutionEnvironments of the bundle in `taskRoot` (each one's log lines into `log`); every
 * environment started is killed after the file's tests.
 */
export function environmentStarter(taskRoot: string) {
  const environments: ExecutionEnvironment[] = [];
  afterAll(() => environments.forEach((e) => e.kill()));
  return async (
    fn: { name: string; timeoutMs: number; memoryMb: number },
    log: string[] = [],
  ): Promise<ExecutionEnvironment> => {
    const e = new ExecutionEnvironment({
      functionName: fn.name,
      functionArn: arnOf(fn.name),
      handler: 'index.handler',
      taskRoot,
      timeoutMs: fn.timeoutMs,
      memoryMb: fn.memoryMb,
      nodePath: process.execPath,
      environment: { PATH: process.env.PATH ?? '' },
      log: (l) => log.push(l),
    });
    environments.push(e);
    await e.start();
    return e;
  };
}

/** Invokes `e` with `event`, then waits until it takes the next event (once its runtime asks for one). */
export async function invokeSettled(e: ExecutionEnvironment, event: unknown): Promise<InvocationResult> {
  const r = await e.invoke(JSON.stringify(event));
  while (e.state === 'busy') await new Promise((res) => setTimeout(res, 5));
  return r;
}
