/** The Lambda functions' environment: every setting of the config schema, as the functions read it back. */
import { settings, type LeaseholdConfig } from '../shared/config.js';

/**
 * Settings a deployment does not take from its context: the local stack's own, the ones the stack sets
 * from its resources (table, region, schedule group and ARNs), and fault injection.
 */
export const NOT_FROM_SYNTH: (keyof LeaseholdConfig)[] = [
  'port',
  'dataDir',
  'workerId',
  'dynamodbEndpoint',
  'region',
  'tableName',
  'scheduleGroup',
  'schedulerRoleArn',
  'fireFunctionArn',
  'scheduleDeadLetterArn',
  'clockOffsetMs',
  'historyFile',
  'testSeededBug',
];

export function lambdaEnvironment(config: LeaseholdConfig): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, setting] of Object.entries(settings) as [keyof LeaseholdConfig, (typeof settings)[keyof LeaseholdConfig]][]) {
    if (NOT_FROM_SYNTH.includes(key)) continue;
    const value = config[key];
    if (value === undefined) continue;
    env[setting.env] = key === 'typeConcurrency' ? Object.entries(value as Record<string, number>).map(([t, n]) => `${t}=${n}`).join(',') : String(value);
  }
  // An empty list would read back as "no limits" anyway; leave it out.
  if (env.LEASEHOLD_TYPE_CONCURRENCY === '') delete env.LEASEHOLD_TYPE_CONCURRENCY;
  return env;
}
