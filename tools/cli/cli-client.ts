/**
 * How the CLI reaches an API: the deployed API (an execute-api URL) signed with your AWS credentials, the
 * sim's API signed as one of its callers (--as), or the local stack unsigned with --owner as its caller.
 * The API commands get a client for it; `leasehold dashboard` signs what it forwards the same way.
 */
import { createClient, type ClientOptions } from '../../shared/client/http-client.js';
import type { LeaseholdClient } from '../../shared/client/client-types.js';
import { regionOfApiUrl, type Credentials } from '../../shared/client/sigv4.js';
import { simCredentials } from './sim-callers.js';

export interface CliClient {
  client: LeaseholdClient;
  url: string;
  /** The local stack (nothing signed): an unreachable API there is most likely `npm start` not running. */
  local: boolean;
}

export interface ApiAccess {
  /** The region to sign for; undefined: nothing is signed (the local stack). */
  region: string | undefined;
  /** The sim caller's keys; undefined with a region: the AWS SDK's default credential chain. */
  credentials: Credentials | undefined;
  /** The local stack's caller (X-Leasehold-Owner); ignored by AWS. */
  owner: string | undefined;
  local: boolean;
}

export function apiAccess(
  url: string,
  flags: { owner?: string | undefined; as?: string | undefined; region?: string | undefined },
  env: Record<string, string | undefined>,
): ApiAccess {
  const deployedRegion = flags.region ?? regionOfApiUrl(new URL(url));
  const sim = deployedRegion ? undefined : simCredentials(url, env, flags.as);
  const region = deployedRegion ?? sim?.region;
  return { region, credentials: sim?.credentials, owner: flags.owner, local: region === undefined };
}

export function cliClient(
  url: string,
  flags: { owner?: string | undefined; as?: string | undefined },
  env: Record<string, string | undefined>,
  /** Tests' injections (fetch, retry delays); the CLI itself passes none. */
  overrides: Partial<ClientOptions> = {},
): CliClient {
  const access = apiAccess(url, flags, env);
  const client = createClient({
    url,
    ...(access.owner ? { owner: access.owner } : {}),
    ...(access.region && access.credentials
      ? { region: access.region, credentials: access.credentials }
      : {}),
    ...overrides,
  });
  return { client, url, local: access.local };
}
