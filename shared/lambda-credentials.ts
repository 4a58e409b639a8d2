/**
 * What the Lambda bundles use in place of `@aws-sdk/credential-provider-node` (cdk/lambda-bundling.ts
 * aliases it). Lambda puts the function role's credentials in the environment, the first place the
 * SDK's default chain looks; the rest of that chain (ini files, SSO, STS web identity, container and
 * instance metadata, login) is about 39 KB of the worker's gzipped bundle that no Lambda ever reaches.
 * Outside a bundle (tests, the CLI, `leasehold serve`) the SDK's own chain is used as before.
 */
import { fromEnv } from '@aws-sdk/credential-provider-env';
import type { AwsCredentialIdentityProvider } from '@smithy/types';

/** The SDK clients call `defaultProvider(init)` when given no credentials: the environment's, or a clear error. */
export function defaultProvider(init?: Parameters<typeof fromEnv>[0]): AwsCredentialIdentityProvider {
  return fromEnv(init);
}
