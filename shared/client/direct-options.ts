/**
 * What `createDirectClient` is given, checked, and the Leasehold configuration it builds from it. The
 * protocol settings (maximum execution time, default attempts, retention, type limits) must be the
 * deployment's, or a task enqueued directly would be stored under other rules than one enqueued
 * through the API: they come from `config`, over the LEASEHOLD_* environment as every Leasehold
 * process reads it (set in a Lambda of the stack; a process elsewhere sets what it changed).
 */
import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import * as z from 'zod';
import type { Clock } from '../clock.js';
import { loadConfig, settings, type ConfigInput, type LeaseholdConfig } from '../config.js';
import { ownerSchema } from '../task-inputs.js';
import type { TaskDefinition } from '../tasks/define.js';
import type { CallerArnLookup } from './direct-owner.js';
import { ClientOptionsError } from './errors.js';
import type { Sleep } from './http-transport.js';

export interface DirectClientOptions {
  /** The deployment's task table (the stack's output `TaskTableName`). */
  tableName: string;
  /** The table's region (default: LEASEHOLD_REGION, else AWS_REGION, else AWS_DEFAULT_REGION). */
  region?: string;
  /**
   * Whose tasks these are. Default: the caller's identity (STS GetCallerIdentity), an assumed-role
   * session reduced to its role as the API does. Required with `endpoint`, where STS is not reachable.
   * Not a check: direct mode trusts its code to name its own owner (see directClientPolicy).
   */
  owner?: string;
  /** A local DynamoDB (dynalite, DynamoDB Local, the sim's): http://127.0.0.1:4567. */
  endpoint?: string;
  /** For DynamoDB, STS and Lambda (default: the SDK's provider chain; with `endpoint`, any key). */
  credentials?: DynamoDBClientConfig['credentials'];
  /**
   * The deployment's task types, e.g. `taskDefinitions` from tasks/catalog.ts: an unknown type or a
   * payload its schema refuses is turned away here, as the API turns it away, with nothing written.
   */
  definitions: readonly TaskDefinition[];
  /** Settings over the LEASEHOLD_* environment (they must match the deployment's). */
  config?: ConfigInput;
  /**
   * The worker function (name or ARN): after an enqueue, start a worker at once, as the API does,
   * instead of leaving the task for the next scheduled tick. Needs lambda:InvokeFunction on it and
   * dynamodb:Query on the table (the fleet's seats are read first).
   */
  workerFunctionName?: string;
  /** A local Lambda Invoke endpoint for `workerFunctionName` (the sim's). */
  lambdaEndpoint?: string;
  /** How the caller's ARN is found when `owner` is not given (default: STS GetCallerIdentity). */
  callerArn?: CallerArnLookup;
  clock?: Clock;
  /** How `waitFor` waits between reads (default: a timer that the signal cuts short). */
  sleep?: Sleep;
}

const optionsSchema = z.object({
  tableName: settings.tableName.schema,
  region: z.string().min(1).optional(),
  owner: ownerSchema.optional(),
  endpoint: settings.dynamodbEndpoint.schema,
  definitions: z.array(z.object({ name: z.string() }).loose(), {
    error: 'must be an array of task definitions',
  }),
  workerFunctionName: z.string().min(1).max(170).optional(),
  lambdaEndpoint: z.url('must be a URL such as http://127.0.0.1:9001').optional(),
});

/**
 * The options checked (a ClientOptionsError naming each bad one, as the HTTP client's) and the
 * configuration the client runs with (a ConfigError for a bad setting, as every process's).
 */
export function directConfig(
  options: DirectClientOptions,
  env: Record<string, string | undefined>,
): LeaseholdConfig {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success)
    throw new ClientOptionsError(
      `createDirectClient: ${parsed.error.issues.map((i) => `${i.path.map(String).join('.') || 'options'} ${i.message}`).join('; ')}.`,
    );
  const { tableName, endpoint, owner } = parsed.data;
  if (endpoint !== undefined && owner === undefined && options.callerArn === undefined)
    throw new ClientOptionsError(
      `createDirectClient: owner is required with endpoint ${endpoint}, where STS cannot tell who the caller is; give the owner the API would see for your principal (ownerOfArn(arn)).`,
    );
  const region = parsed.data.region ?? (env.LEASEHOLD_REGION || env.AWS_REGION || env.AWS_DEFAULT_REGION);
  if (region === undefined && endpoint === undefined)
    throw new ClientOptionsError(
      'createDirectClient: region is required: none was given, and none of LEASEHOLD_REGION, AWS_REGION or AWS_DEFAULT_REGION is set.',
    );
  return loadConfig(env, {
    ...options.config,
    tableName,
    ...(region === undefined ? {} : { region }),
    dynamodbEndpoint: endpoint,
  });
}
