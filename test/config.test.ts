import { describe, expect, it } from 'vitest';
import {
  checkConfigRules,
  defineConfig,
  loadConfig,
  MAX_DURATION_MS,
  settings,
  settingsFor,
} from '../shared/config.js';
import { ConfigError } from '../shared/errors.js';

const problemsOf = (fn: () => unknown): ConfigError => {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError');
};

describe('configuration', () => {
  it('has the defaults docs/operations.md lists', () => {
    expect(loadConfig({})).toMatchObject({
      leaseTimeoutMs: 60_000,
      heartbeatIntervalMs: 10_000,
      recoveryIntervalMs: 60_000,
      maxExecutionMs: 300_000,
      recoveryBatchSize: 100,
      recoveryMaxBatches: 10,
      typeConcurrency: {},
    });
  });

  it('reads every setting from its environment variable', () => {
    const c = loadConfig({
      LEASEHOLD_TABLE: 'my-tasks',
      LEASEHOLD_LEASE_TIMEOUT_MS: '30000',
      LEASEHOLD_HEARTBEAT_INTERVAL_MS: '6000',
      LEASEHOLD_REQUEST_DEADLINE_MS: '2000',
      LEASEHOLD_RECOVERY_INTERVAL_MS: '45000',
      LEASEHOLD_MAX_EXECUTION_MS: '120000',
      LEASEHOLD_GLOBAL_CONCURRENCY: '50',
      LEASEHOLD_TYPE_CONCURRENCY: 'email.send=5, report=1',
      LEASEHOLD_DYNAMODB_ENDPOINT: 'http://127.0.0.1:4567',
    });
    expect(c).toMatchObject({
      tableName: 'my-tasks',
      leaseTimeoutMs: 30_000,
      heartbeatIntervalMs: 6_000,
      recoveryIntervalMs: 45_000,
      maxExecutionMs: 120_000,
      globalConcurrency: 50,
      typeConcurrency: { 'email.send': 5, report: 1 },
      dynamodbEndpoint: 'http://127.0.0.1:4567',
    });
    expect(Object.values(settings).every((s) => s.env.startsWith('LEASEHOLD_'))).toBe(true);
  });

  it('names the variable and the value of a setting that does not parse, and lists them all', () => {
    const error = problemsOf(() =>
      loadConfig({
        LEASEHOLD_LEASE_TIMEOUT_MS: 'sixty',
        LEASEHOLD_WORKER_CONCURRENCY: '-2',
        LEASEHOLD_TYPE_CONCURRENCY: 'email=0',
      }),
    );
    expect(error.problems.map((p) => p.path).sort()).toEqual([
      'LEASEHOLD_LEASE_TIMEOUT_MS',
      'LEASEHOLD_TYPE_CONCURRENCY',
      'LEASEHOLD_WORKER_CONCURRENCY',
    ]);
    expect(error.message).toContain('LEASEHOLD_LEASE_TIMEOUT_MS');
    expect(error.message).toContain('"sixty"');
    expect(error.message).toContain('"email=0" is not of the form type=limit');
  });

  it.each([
    [
      { heartbeatIntervalMs: 30_000 },
      'LEASEHOLD_HEARTBEAT_INTERVAL_MS',
      'must be less than half the lease timeout',
    ],
    [
      { leaseTimeoutMs: 300_000 },
      'LEASEHOLD_LEASE_TIMEOUT_MS',
      'must be less than the maximum execution time',
    ],
    [
      { clockSkewMs: 50_000 },
      'LEASEHOLD_CLOCK_SKEW_MS',
      'must be less than lease timeout minus heartbeat interval',
    ],
    [
      { requestDeadlineMs: 10_000, drainMarginMs: 30_000 },
      'LEASEHOLD_REQUEST_DEADLINE_MS',
      'must be less than the heartbeat interval',
    ],
    [{ drainMarginMs: 10_000 }, 'LEASEHOLD_DRAIN_MARGIN_MS', 'must exceed two request deadlines'],
    [
      { backoffBaseMs: 10_000, backoffMaxMs: 5_000 },
      'LEASEHOLD_BACKOFF_BASE_MS',
      'must not exceed the backoff maximum',
    ],
  ])('rule: %o is refused with a message on %s', (values, variable, text) => {
    const error = problemsOf(() => defineConfig(values));
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toMatchObject({ path: variable });
    expect(error.problems[0]!.message).toContain(text);
  });

  it('bounds every duration at 7 days, below the 24.8 days a Node timer can wait', () => {
    const error = problemsOf(() =>
      loadConfig({
        LEASEHOLD_BACKOFF_MAX_MS: String(2 ** 31),
        LEASEHOLD_MAX_EXECUTION_MS: String(30 * 86_400_000),
        LEASEHOLD_RECOVERY_INTERVAL_MS: '604800001',
      }),
    );
    expect(error.problems.map((p) => p.path).sort()).toEqual([
      'LEASEHOLD_BACKOFF_MAX_MS',
      'LEASEHOLD_MAX_EXECUTION_MS',
      'LEASEHOLD_RECOVERY_INTERVAL_MS',
    ]);
    expect(error.problems[0]!.message).toContain('must be at most 604800000 ms (7 days)');
    expect(
      Object.values(settings)
        .filter((s) => s.env.endsWith('_MS'))
        .every((s) => !s.schema.safeParse(MAX_DURATION_MS + 1).success),
    ).toBe(true);
    expect(
      loadConfig({
        LEASEHOLD_BACKOFF_MAX_MS: String(MAX_DURATION_MS),
        LEASEHOLD_MAX_EXECUTION_MS: String(MAX_DURATION_MS),
      }),
    ).toMatchObject({ backoffMaxMs: MAX_DURATION_MS, maxExecutionMs: MAX_DURATION_MS });
  });

  it('reads LEASEHOLD_ALLOWED_HOSTS as lower-case Host values, and refuses a name with a path or a scheme', () => {
    expect(loadConfig({}).allowedHosts).toEqual([]);
    expect(loadConfig({ LEASEHOLD_ALLOWED_HOSTS: 'MyHost:8080, [::1]:3000,' }).allowedHosts).toEqual([
      'myhost:8080',
      '[::1]:3000',
    ]);
    expect(() => loadConfig({ LEASEHOLD_ALLOWED_HOSTS: 'http://evil.example/' })).toThrow(
      /LEASEHOLD_ALLOWED_HOSTS.*comma-separated host:port names/s,
    );
  });

  it('splits the settings by audience, and none of them serves a test harness', () => {
    expect(settingsFor('local')).toEqual(['port', 'allowedHosts', 'dataDir', 'workerId']);
    expect(settingsFor('scheduler')).toEqual([
      'scheduleGroup',
      'schedulerRoleArn',
      'workerFunctionArn',
      'fireFunctionArn',
      'scheduleDeadLetterArn',
    ]);
    expect(settingsFor('table')).toEqual(['tableName', 'region', 'dynamodbEndpoint']);
    const all = settingsFor('table', 'protocol', 'worker', 'scheduler', 'local');
    expect(all.sort()).toEqual(Object.keys(settings).sort());
    // The chaos harness wires its clock offset, history and seeded bug through its own entry point.
    expect(
      Object.values(settings)
        .map((s) => s.env)
        .filter((env) => /OFFSET|HISTORY|SEEDED/.test(env)),
    ).toEqual([]);
  });

  it('reports every broken rule in one error', () => {
    const error = problemsOf(() =>
      defineConfig({
        heartbeatIntervalMs: 58_000,
        leaseTimeoutMs: 60_000,
        maxExecutionMs: 50_000,
        backoffBaseMs: 9,
        backoffMaxMs: 1,
      }),
    );
    expect(error.problems.map((p) => p.path)).toEqual([
      'LEASEHOLD_HEARTBEAT_INTERVAL_MS',
      'LEASEHOLD_LEASE_TIMEOUT_MS',
      'LEASEHOLD_CLOCK_SKEW_MS',
      'LEASEHOLD_BACKOFF_BASE_MS',
    ]);
  });

  it('warns about (but allows) a recovery interval outside lease..2 x lease', () => {
    const base = defineConfig();
    expect(checkConfigRules({ ...base, recoveryIntervalMs: 30_000 }).warnings[0]).toContain(
      'below the lease timeout',
    );
    expect(checkConfigRules({ ...base, recoveryIntervalMs: 200_000 }).warnings[0]).toContain(
      'above twice the lease timeout',
    );
    expect(checkConfigRules(base)).toEqual({ problems: [], warnings: [] });
  });
});
