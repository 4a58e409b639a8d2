/**
 * The client the CLI's API commands use: the deployed API (an execute-api URL) signed with your AWS
 * credentials, the sim's API signed as one of its callers (--as), or the local stack unsigned with
 * --owner as its caller.
 */
import { createClient, type ClientOptions } from '../client/http-client.js';
import type { LeaseholdClient } from '../client/client-types.js';
import { regionOfApiUrl } from '../client/sigv4.js';
import { simCredentials } from './sim-callers.js';

export interface CliClient {
  client: LeaseholdClient;
  url: string;
  /** The local stack (nothing signed): an unreachable API there is most likely `npm start` not running. */
  local: boolean;
}

export function cliClient(
  url: string,
  flags: { owner?: string | undefined; as?: string | undefined },
  env: Record<string, string | undefined>,
  /** Tests' injections (fetch, retry delays); the CLI itself passes none. */
  overrides: Partial<ClientOptions> = {},
): CliClient {
  const deployed = regionOfApiUrl(new URL(url)) !== undefined;
  const sim = deployed ? undefined : simCredentials(url, env, flags.as);
  const client = createClient({
    url,
    ...(flags.owner ? { owner: flags.owner } : {}),
    ...(sim ? { region: sim.region, credentials: sim.credentials } : {}),
    ...overrides,
  });
  return { client, url, local: !deployed && !sim };
}
