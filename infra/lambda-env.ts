/** The Lambda functions' environment: every setting of the config schema, as the functions read it back. */
import { settings, settingsFor, type LeaseholdConfig } from '../shared/config.js';

/**
 * Settings a deployment does not take from its context: the ones the stack sets from its resources
 * (table, region, schedule group and ARNs) and the local stack's own.
 */
export const NOT_FROM_SYNTH: (keyof LeaseholdConfig)[] = settingsFor('table', 'scheduler', 'local');

export function lambdaEnvironment(config: LeaseholdConfig): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of settingsFor('protocol', 'worker')) {
    const value = config[key];
    if (value === undefined) continue;
    env[settings[key].env] =
      key === 'typeConcurrency'
        ? Object.entries(value as Record<string, number>)
            .map(([t, n]) => `${t}=${n}`)
            .join(',')
        : String(value);
  }
  // An empty list would read back as "no limits" anyway; leave it out.
  if (env.LEASEHOLD_TYPE_CONCURRENCY === '') delete env.LEASEHOLD_TYPE_CONCURRENCY;
  return env;
}
