/**
 * The CLI against `leasehold sim`: when --url is the sim's API (as its sim.json says), the client signs
 * with the keys of one of the sim's local callers and the sim's region, as it would with your AWS
 * credentials against the deployed API. The sim writes sim.json in its data directory (default
 * .leasehold-sim).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import type { Credentials } from '../../shared/client/sigv4.js';
import { UsageError } from './usage-error.js';

const simFile = z.object({
  apiUrl: z.string(),
  region: z.string(),
  callers: z.array(
    z.object({
      name: z.string(),
      accessKeyId: z.string(),
      secretAccessKey: z.string(),
      sessionToken: z.string().optional(),
    }),
  ),
});

/** What to sign with for the sim's API at `baseUrl`, or undefined when no running sim's sim.json names that URL. */
export function simCredentials(
  baseUrl: string,
  env: Record<string, string | undefined>,
  callerName = 'admin',
): { region: string; credentials: Credentials } | undefined {
  const path = env.LEASEHOLD_SIM_FILE ?? join('.leasehold-sim', 'sim.json');
  if (!existsSync(path)) return undefined;
  const sim = simFile.parse(JSON.parse(readFileSync(path, 'utf8')));
  if (new URL(sim.apiUrl).origin !== new URL(baseUrl).origin) return undefined;
  const caller = sim.callers.find((c) => c.name === callerName);
  // A mistyped --as: the CLI prints it with the usage (exit 2), not as a crash.
  if (!caller)
    throw new UsageError(
      `the sim has no caller "${callerName}": pass --as with one of its callers, ${sim.callers.map((c) => c.name).join(', ')}`,
    );
  return {
    region: sim.region,
    credentials: {
      accessKeyId: caller.accessKeyId,
      secretAccessKey: caller.secretAccessKey,
      ...(caller.sessionToken ? { sessionToken: caller.sessionToken } : {}),
    },
  };
}
