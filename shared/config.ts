import * as z from 'zod';
import { ConfigError, type InputProblem } from './errors.js';

import { MAX_DURATION_MS } from './durations.js';

export { MAX_DURATION_MS };
const maxDuration = [MAX_DURATION_MS, `must be at most ${MAX_DURATION_MS} ms (7 days)`] as const;

const positiveMs = z.coerce
  .number()
  .int('must be a whole number of milliseconds')
  .positive('must be greater than 0')
  .max(...maxDuration);
const positiveInt = z.coerce.number().int('must be a whole number').positive('must be greater than 0');
const nonNegativeMs = z.coerce
  .number()
  .int('must be a whole number of milliseconds')
  .min(0, 'must not be negative')
  .max(...maxDuration);

/** `type=3,other.type=5` -> { type: 3, 'other.type': 5 } */
const typeLimits = z.string().transform((text, ctx) => {
  const limits: Record<string, number> = {};
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const match = /^([A-Za-z0-9][A-Za-z0-9._:-]*)=(\d+)$/.exec(part);
    if (!match || Number(match[2]) < 1) {
      ctx.addIssue({
        code: 'custom',
        message: `"${part}" is not of the form type=limit with a limit of at least 1`,
      });
      return z.NEVER;
    }
    limits[match[1]!] = Number(match[2]);
  }
  return limits;
});

/**
 * Every setting: who it is for, its environment variable, its schema and its default. One table,
 * so the docs, the Lambda environment and the local stack cannot drift apart.
 */
export const settings = {
  tableName: {
    audience: 'table',
    env: 'LEASEHOLD_TABLE',
    schema: z.string().regex(/^[A-Za-z0-9_.-]{3,255}$/, 'must be 3-255 characters of A-Z a-z 0-9 _ . -'),
    default: 'leasehold-tasks',
  },
  region: { audience: 'table', env: 'LEASEHOLD_REGION', schema: z.string().min(1), default: 'us-east-1' },
  dynamodbEndpoint: {
    audience: 'table',
    env: 'LEASEHOLD_DYNAMODB_ENDPOINT',
    schema: z.url('must be a URL such as http://127.0.0.1:4567').optional(),
    default: undefined,
  },
  leaseTimeoutMs: {
    audience: 'protocol',
    env: 'LEASEHOLD_LEASE_TIMEOUT_MS',
    schema: positiveMs,
    default: 60_000,
  },
  heartbeatIntervalMs: {
    audience: 'protocol',
    env: 'LEASEHOLD_HEARTBEAT_INTERVAL_MS',
    schema: positiveMs,
    default: 10_000,
  },
  recoveryIntervalMs: {
    audience: 'protocol',
    env: 'LEASEHOLD_RECOVERY_INTERVAL_MS',
    schema: positiveMs,
    default: 60_000,
  },
  maxExecutionMs: {
    audience: 'protocol',
    env: 'LEASEHOLD_MAX_EXECUTION_MS',
    schema: positiveMs,
    default: 300_000,
  },
  recoveryBatchSize: {
    audience: 'protocol',
    env: 'LEASEHOLD_RECOVERY_BATCH_SIZE',
    schema: positiveInt.max(100, 'must be at most 100 (one BatchGetItem)'),
    default: 100,
  },
  recoveryMaxBatches: {
    audience: 'protocol',
    env: 'LEASEHOLD_RECOVERY_MAX_BATCHES',
    schema: positiveInt,
    default: 10,
  },
  flowCheckMs: {
    audience: 'protocol',
    env: 'LEASEHOLD_FLOW_CHECK_MS',
    schema: positiveMs,
    default: 60_000,
  },
  clockSkewMs: {
    audience: 'protocol',
    env: 'LEASEHOLD_CLOCK_SKEW_MS',
    schema: nonNegativeMs,
    default: 5_000,
  },
  requestDeadlineMs: {
    audience: 'protocol',
    env: 'LEASEHOLD_REQUEST_DEADLINE_MS',
    schema: positiveMs,
    default: 5_000,
  },
  pollIntervalMs: {
    audience: 'worker',
    env: 'LEASEHOLD_POLL_INTERVAL_MS',
    schema: positiveMs,
    default: 1_000,
  },
  workerConcurrency: {
    audience: 'worker',
    env: 'LEASEHOLD_WORKER_CONCURRENCY',
    schema: positiveInt.max(1000),
    default: 8,
  },
  claimWindow: {
    audience: 'worker',
    env: 'LEASEHOLD_CLAIM_WINDOW',
    schema: positiveInt.max(100),
    default: 8,
  },
  defaultMaxAttempts: {
    audience: 'protocol',
    env: 'LEASEHOLD_DEFAULT_MAX_ATTEMPTS',
    schema: positiveInt.max(100),
    default: 3,
  },
  backoffBaseMs: {
    audience: 'protocol',
    env: 'LEASEHOLD_BACKOFF_BASE_MS',
    schema: nonNegativeMs,
    default: 1_000,
  },
  backoffMaxMs: {
    audience: 'protocol',
    env: 'LEASEHOLD_BACKOFF_MAX_MS',
    schema: nonNegativeMs,
    default: 300_000,
  },
  globalConcurrency: {
    audience: 'protocol',
    env: 'LEASEHOLD_GLOBAL_CONCURRENCY',
    schema: positiveInt.max(10_000).optional(),
    default: undefined,
  },
  typeConcurrency: {
    audience: 'protocol',
    env: 'LEASEHOLD_TYPE_CONCURRENCY',
    schema: typeLimits,
    default: '',
  },
  workerTypes: {
    audience: 'worker',
    env: 'LEASEHOLD_WORKER_TYPES',
    schema: z
      .string()
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9._:-]*(,[A-Za-z0-9][A-Za-z0-9._:-]*)*$/,
        'must be task type names separated by commas, e.g. email.send,report.build',
      )
      .optional(),
    default: undefined,
  },
  retentionDays: {
    audience: 'protocol',
    env: 'LEASEHOLD_RETENTION_DAYS',
    schema: positiveInt.max(3650),
    default: 30,
  },
  // How long a task may wait for its turn while its payload (kept apart when larger than 128 bytes) is
  // kept: the payload item's TTL is set when it is written, and is never rewritten (task-body.ts).
  maxWaitDays: {
    audience: 'protocol',
    env: 'LEASEHOLD_MAX_WAIT_DAYS',
    schema: positiveInt.max(3650),
    default: 30,
  },
  // A kick starts a worker when work arrives, so an idle one need not wait long for it (it did 10 s).
  idleStopMs: { audience: 'worker', env: 'LEASEHOLD_IDLE_STOP_MS', schema: positiveMs, default: 2_000 },
  workerMaxConcurrency: {
    audience: 'worker',
    env: 'LEASEHOLD_WORKER_MAX_CONCURRENCY',
    schema: positiveInt.max(1000),
    default: 10,
  },
  kickIntervalMs: {
    audience: 'worker',
    env: 'LEASEHOLD_KICK_INTERVAL_MS',
    schema: positiveMs,
    default: 250,
  },
  // How long a fresh worker invocation can still claim a task of the longest allowed timeout
  // (invocation-budget.ts): one tick period, so each minute's tick can start every type. A shorter
  // window makes shorter invocations (each then hands its seat on sooner).
  workerClaimWindowMs: {
    audience: 'worker',
    env: 'LEASEHOLD_WORKER_CLAIM_WINDOW_MS',
    schema: positiveMs,
    default: 60_000,
  },
  drainMarginMs: {
    audience: 'worker',
    env: 'LEASEHOLD_DRAIN_MARGIN_MS',
    schema: positiveMs,
    default: 20_000,
  },
  // Recurring schedules in AWS (set by the CDK stack); without them schedules are evaluated locally.
  scheduleGroup: {
    audience: 'scheduler',
    env: 'LEASEHOLD_SCHEDULE_GROUP',
    schema: z.string().min(1).optional(),
    default: undefined,
  },
  schedulerRoleArn: {
    audience: 'scheduler',
    env: 'LEASEHOLD_SCHEDULER_ROLE_ARN',
    schema: z.string().startsWith('arn:', 'must be an IAM role ARN').optional(),
    default: undefined,
  },
  workerFunctionArn: {
    audience: 'scheduler',
    env: 'LEASEHOLD_WORKER_FUNCTION_ARN',
    schema: z.string().startsWith('arn:', 'must be a Lambda function ARN').optional(),
    default: undefined,
  },
  fireFunctionArn: {
    audience: 'scheduler',
    env: 'LEASEHOLD_FIRE_FUNCTION_ARN',
    schema: z.string().startsWith('arn:', 'must be a Lambda function ARN').optional(),
    default: undefined,
  },
  scheduleDeadLetterArn: {
    audience: 'scheduler',
    env: 'LEASEHOLD_SCHEDULE_DLQ_ARN',
    schema: z.string().startsWith('arn:', 'must be an SQS queue ARN').optional(),
    default: undefined,
  },
  // The local stack's own settings.
  port: {
    audience: 'local',
    env: 'LEASEHOLD_PORT',
    schema: z.coerce
      .number()
      .int('must be a whole number')
      .min(0)
      .max(65_535, 'must be a TCP port (0-65535)'),
    default: 3000,
  },
  allowedHosts: {
    audience: 'local',
    env: 'LEASEHOLD_ALLOWED_HOSTS',
    // More names the local stack answers to besides the loopback ones (a container's published name,
    // e.g. "myhost:8080"); every other Host is refused, as a DNS-rebinding page sends (browser-guard.ts).
    schema: z
      .string()
      .transform((text) =>
        text
          .split(',')
          .map((h) => h.trim().toLowerCase())
          .filter(Boolean),
      )
      .pipe(z.array(z.string().regex(/^[a-z0-9.[\]:-]+$/, 'must be comma-separated host:port names'))),
    default: '',
  },
  dataDir: { audience: 'local', env: 'LEASEHOLD_DATA_DIR', schema: z.string().min(1), default: '.leasehold' },
  workerId: {
    audience: 'local',
    env: 'LEASEHOLD_WORKER_ID',
    schema: z
      .string()
      .regex(/^[A-Za-z0-9._:@/-]{1,128}$/, 'must be 1-128 characters: letters, digits and . _ : @ / -')
      .optional(),
    default: undefined,
  },
} as const;

type Settings = typeof settings;
export type LeaseholdConfig = { [K in keyof Settings]: z.output<Settings[K]['schema']> };

/**
 * Who a setting is for. `table`: where the tasks live (the stack sets it from its resources).
 * `protocol`: what every writer must agree on (leases, deadlines, retries, limits, retention).
 * `worker`: how one worker claims and stops. `scheduler`: how schedules reach EventBridge Scheduler
 * (the stack sets it). `local`: the local stack only, never a Lambda.
 */
export type Audience = 'table' | 'protocol' | 'worker' | 'scheduler' | 'local';
export type SettingsFor<A extends Audience> = {
  [K in keyof Settings]: Settings[K]['audience'] extends A ? K : never;
}[keyof Settings];

export type TableConfig = Pick<LeaseholdConfig, SettingsFor<'table'>>;
export type ProtocolConfig = Pick<LeaseholdConfig, SettingsFor<'protocol'>>;
export type WorkerSettings = Pick<LeaseholdConfig, SettingsFor<'worker'>>;
export type SchedulerWiring = Pick<LeaseholdConfig, SettingsFor<'scheduler'>>;
export type LocalStackConfig = Pick<LeaseholdConfig, SettingsFor<'local'>>;

/** The settings of the given audiences (e.g. what a deployment passes to its Lambdas). */
export function settingsFor(...audiences: Audience[]): (keyof LeaseholdConfig)[] {
  return (Object.keys(settings) as (keyof LeaseholdConfig)[]).filter((k) =>
    audiences.includes(settings[k].audience),
  );
}
export type ConfigInput = Partial<{
  [K in keyof Settings]: z.input<Settings[K]['schema']> | LeaseholdConfig[K];
}>;

/**
 * The rules between settings. Pure: returns every broken rule, never throws.
 * `warnings` are recommendations; they do not stop start-up.
 */
export function checkConfigRules(c: LeaseholdConfig): { problems: InputProblem[]; warnings: string[] } {
  const problems: InputProblem[] = [];
  const warnings: string[] = [];
  const env = (k: keyof Settings) => settings[k].env;
  if (c.heartbeatIntervalMs * 2 >= c.leaseTimeoutMs) {
    problems.push({
      path: env('heartbeatIntervalMs'),
      message: `heartbeat interval ${c.heartbeatIntervalMs} ms must be less than half the lease timeout (${c.leaseTimeoutMs} ms), so a lease is renewed at least once before it runs out; lease/4 to lease/6 is recommended`,
    });
  }
  if (c.leaseTimeoutMs >= c.maxExecutionMs) {
    problems.push({
      path: env('leaseTimeoutMs'),
      message: `lease timeout ${c.leaseTimeoutMs} ms must be less than the maximum execution time (${c.maxExecutionMs} ms)`,
    });
  }
  if (c.clockSkewMs >= c.leaseTimeoutMs - c.heartbeatIntervalMs) {
    problems.push({
      path: env('clockSkewMs'),
      message: `clock skew margin ${c.clockSkewMs} ms must be less than lease timeout minus heartbeat interval (${c.leaseTimeoutMs - c.heartbeatIntervalMs} ms), or recovery would take live leases for expired ones`,
    });
  }
  if (c.requestDeadlineMs >= c.heartbeatIntervalMs) {
    problems.push({
      path: env('requestDeadlineMs'),
      message: `request deadline ${c.requestDeadlineMs} ms must be less than the heartbeat interval (${c.heartbeatIntervalMs} ms), so one slow renewal cannot overlap the next`,
    });
  }
  if (c.drainMarginMs <= 2 * c.requestDeadlineMs) {
    problems.push({
      path: env('drainMarginMs'),
      message: `drain margin ${c.drainMarginMs} ms must exceed two request deadlines (${2 * c.requestDeadlineMs} ms): a returning worker needs time to wait for its handlers and release its leases`,
    });
  }
  if (c.backoffBaseMs > c.backoffMaxMs) {
    problems.push({
      path: env('backoffBaseMs'),
      message: `backoff base ${c.backoffBaseMs} ms must not exceed the backoff maximum (${c.backoffMaxMs} ms)`,
    });
  }
  if (c.recoveryIntervalMs < c.leaseTimeoutMs) {
    warnings.push(
      `${env('recoveryIntervalMs')} (${c.recoveryIntervalMs} ms) below the lease timeout sweeps more often than leases can expire`,
    );
  }
  if (c.recoveryIntervalMs > 2 * c.leaseTimeoutMs) {
    warnings.push(
      `${env('recoveryIntervalMs')} (${c.recoveryIntervalMs} ms) above twice the lease timeout delays recovery of dead workers`,
    );
  }
  return { problems, warnings };
}

/** Reads and checks the configuration from environment variables. Throws one ConfigError naming every bad variable. */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: ConfigInput = {},
): LeaseholdConfig {
  const raw: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(settings)) {
    const fromEnv = env[setting.env];
    raw[key] =
      key in overrides
        ? overrides[key as keyof ConfigInput]
        : fromEnv === undefined || fromEnv === ''
          ? setting.default
          : fromEnv;
  }
  return parseConfig(raw);
}

/** Builds a checked configuration from defaults plus the given values (tests and embedding). */
export function defineConfig(values: ConfigInput = {}): LeaseholdConfig {
  return loadConfig({}, values);
}

function parseConfig(raw: Record<string, unknown>): LeaseholdConfig {
  const problems: InputProblem[] = [];
  const parsed: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(settings)) {
    const value = raw[key];
    // Already-parsed values (e.g. a limits object passed by code) skip the text schema.
    if (key === 'typeConcurrency' && typeof value === 'object' && value !== null) {
      parsed[key] = value;
      continue;
    }
    const result = (setting.schema as z.ZodType).safeParse(value);
    if (result.success) parsed[key] = result.data;
    else
      problems.push(
        ...result.error.issues.map((i) => ({
          path: setting.env,
          message: `${i.message} (got ${JSON.stringify(value)})`,
        })),
      );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const config = parsed as LeaseholdConfig;
  const rules = checkConfigRules(config);
  if (rules.problems.length > 0) throw new ConfigError(rules.problems);
  return config;
}
