/** The Lambda functions' environment: every setting of the config schema, as the functions read it back. */
import { settings, type LeaseholdConfig } from '../shared/config.js';
import { deployableSettings } from './deployment-settings.js';

export function lambdaEnvironment(config: LeaseholdConfig): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of deployableSettings()) {
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
