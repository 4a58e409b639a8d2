/**
 * The settings a deployment is synthesized with. They come from CDK context (`cdk.json` or
 * `cdk deploy -c leasehold:maxExecutionMs=600000`), never from the deployer's shell: a
 * LEASEHOLD_POLL_INTERVAL_MS=20 left over from local testing must not reach production.
 */
import {
  defineConfig,
  settings,
  settingsFor,
  type ConfigInput,
  type LeaseholdConfig,
} from '../shared/config.js';
import { ConfigError, type InputProblem } from '../shared/errors.js';

export const CONTEXT_PREFIX = 'leasehold:';

export interface DeploymentSettings {
  config: LeaseholdConfig;
  stackName: string;
  /** Opt-in: a reservation fails `cdk deploy` on accounts whose concurrency quota cannot spare it. */
  workerReservedConcurrency: number | undefined;
  /** Opt-in: bundle and enable source maps (stack traces in TypeScript, at a cold-start cost). */
  sourceMaps: boolean;
  /** Opt-in: pre-warm the table and its indexes for this peak of task starts a second (task-table.ts). */
  peakStartsPerSecond: number | undefined;
}

type ContextReader = (key: string) => unknown;

const DEPLOYMENT_KEYS = [
  'stackName',
  'workerReservedConcurrency',
  'sourceMaps',
  'peakStartsPerSecond',
] as const;

/**
 * The config keys a deployment may set: the protocol's and the worker's. The table, region and
 * scheduler wiring come from the stack's own resources; the local stack's settings never reach AWS.
 */
export function deployableSettings(): (keyof LeaseholdConfig)[] {
  return settingsFor('protocol', 'worker');
}

/** Reads and checks the deployment's settings from CDK context; one ConfigError lists every problem. */
export function readDeploymentSettings(context: ContextReader, contextKeys: string[]): DeploymentSettings {
  const problems: InputProblem[] = [];
  const allowed = new Set<string>([...deployableSettings(), ...DEPLOYMENT_KEYS]);
  for (const key of contextKeys.filter((k) => k.startsWith(CONTEXT_PREFIX))) {
    const name = key.slice(CONTEXT_PREFIX.length);
    if (!allowed.has(name))
      problems.push({
        path: key,
        message: `is not a deployment setting; use one of ${[...allowed].map((k) => CONTEXT_PREFIX + k).join(', ')}`,
      });
  }
  const values: ConfigInput = {};
  for (const key of deployableSettings()) {
    const value = context(CONTEXT_PREFIX + key);
    if (value !== undefined)
      (values as Record<string, unknown>)[key] = typeof value === 'number' ? String(value) : value;
  }
  let config: LeaseholdConfig | undefined;
  try {
    config = defineConfig(values);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems.map((p) => ({ ...p, path: contextKeyFor(p.path) })));
  }
  const reserved = context(`${CONTEXT_PREFIX}workerReservedConcurrency`);
  const reservedCount = reserved === undefined ? undefined : Number(reserved);
  if (reservedCount !== undefined && !(Number.isInteger(reservedCount) && reservedCount >= 1)) {
    problems.push({
      path: `${CONTEXT_PREFIX}workerReservedConcurrency`,
      message: `must be a whole number of at least 1 (got ${JSON.stringify(reserved)})`,
    });
  }
  // The fleet runs up to workerMaxConcurrency invocations, plus the scheduled tick and kicked ones
  // that find it full: a smaller reservation throttles the fleet's own scale-ups (their events dropped).
  const needed = config && reservedFloor(config.workerMaxConcurrency);
  if (
    needed !== undefined &&
    reservedCount !== undefined &&
    Number.isInteger(reservedCount) &&
    reservedCount >= 1 &&
    reservedCount < needed
  )
    problems.push({
      path: `${CONTEXT_PREFIX}workerReservedConcurrency`,
      message: `must be at least ${needed} (workerMaxConcurrency ${config!.workerMaxConcurrency} + ${RESERVATION_MARGIN} for the scheduled tick and kicks that find the fleet full), or left unset; a smaller one throttles the fleet's own scale-ups (got ${reservedCount})`,
    });
  const sourceMapsValue = context(`${CONTEXT_PREFIX}sourceMaps`);
  const sourceMaps = sourceMapsValue === true || sourceMapsValue === 'true';
  if (sourceMapsValue !== undefined && !['true', 'false', true, false].includes(sourceMapsValue as string))
    problems.push({
      path: `${CONTEXT_PREFIX}sourceMaps`,
      message: `must be true or false (got ${JSON.stringify(sourceMapsValue)})`,
    });
  const peak = context(`${CONTEXT_PREFIX}peakStartsPerSecond`);
  const peakStartsPerSecond = peak === undefined ? undefined : Number(peak);
  if (
    peakStartsPerSecond !== undefined &&
    !(Number.isInteger(peakStartsPerSecond) && peakStartsPerSecond >= 1 && peakStartsPerSecond <= 100_000)
  )
    problems.push({
      path: `${CONTEXT_PREFIX}peakStartsPerSecond`,
      message: `must be a whole number of task starts a second, 1 to 100000 (got ${JSON.stringify(peak)})`,
    });
  const stackName = String(context(`${CONTEXT_PREFIX}stackName`) ?? 'Leasehold');
  if (!/^[A-Za-z][A-Za-z0-9-]{0,127}$/.test(stackName))
    problems.push({
      path: `${CONTEXT_PREFIX}stackName`,
      message: 'must start with a letter and hold only letters, digits and hyphens (at most 128)',
    });
  if (problems.length > 0 || !config) throw new ConfigError(problems);
  return { config, stackName, workerReservedConcurrency: reservedCount, sourceMaps, peakStartsPerSecond };
}

/** Worker invocations besides the fleet's seats that run at once: the scheduled tick and a kick that finds no seat. */
export const RESERVATION_MARGIN = 2;

/** The smallest worker reservation that does not throttle the fleet itself. */
export const reservedFloor = (workerMaxConcurrency: number) => workerMaxConcurrency + RESERVATION_MARGIN;

/** A config problem names the environment variable; a deployer sets the context key instead. */
function contextKeyFor(envName: string): string {
  const entry = Object.entries(settings).find(([, s]) => s.env === envName);
  return entry ? `${CONTEXT_PREFIX}${entry[0]}` : envName;
}

/** What `cdk synth` prints: every setting the functions get, marking the ones that differ from the default. */
export function describeSettings(deployment: DeploymentSettings, shellVariables: string[]): string {
  const lines = [
    `Leasehold settings for stack ${deployment.stackName} (CDK context ${CONTEXT_PREFIX}<name>):`,
  ];
  for (const key of deployableSettings()) {
    const value = deployment.config[key];
    if (value === undefined) continue;
    const shown = typeof value === 'object' ? JSON.stringify(value) : String(value);
    const fallback = settings[key].default;
    const isDefault =
      fallback === undefined
        ? false
        : String(fallback) === shown || (key === 'typeConcurrency' && shown === '{}');
    lines.push(`  ${key.padEnd(22)} ${shown}${isDefault ? '' : '   (set)'}`);
  }
  lines.push(
    `  ${'workerReservedConcurrency'.padEnd(22)} ${deployment.workerReservedConcurrency ?? 'none (opt-in)'}`,
    `  ${'sourceMaps'.padEnd(22)} ${deployment.sourceMaps ? 'on' : 'off (opt-in)'}`,
    `  ${'peakStartsPerSecond'.padEnd(22)} ${deployment.peakStartsPerSecond ?? "none (a new table's 4,000 writes a second)"}`,
  );
  const ignored = shellVariables.filter((k) => k.startsWith('LEASEHOLD_'));
  if (ignored.length > 0)
    lines.push(`  ignored from your shell (set them as context instead): ${ignored.sort().join(', ')}`);
  return lines.join('\n');
}
