/**
 * SigV4 signing for calls to the API (IAM authorization, service `execute-api`): with the caller's AWS
 * credentials (the SDK's default provider chain: environment, profile, SSO, role) or keys given (the
 * sim's callers). The client signs every attempt afresh: a signature carries its time.
 */
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';

export type Credentials = AwsCredentialIdentity | AwsCredentialIdentityProvider;

/** The region of an execute-api URL, e.g. https://abc123.execute-api.eu-west-1.amazonaws.com. */
export function regionOfApiUrl(url: URL): string | undefined {
  return /\.execute-api\.([a-z0-9-]+)\.amazonaws\.com$/.exec(url.hostname)?.[1];
}

/** The request's headers with the signature's added (host, x-amz-date, authorization, ...). */
export type RequestSigner = (
  url: URL,
  init: { method: string; headers: Record<string, string>; body?: string },
) => Promise<Record<string, string>>;

export function sigv4Signer(
  region: string,
  credentials: Credentials = defaultProvider(),
  signingDate?: Date,
): RequestSigner {
  const signer = new SignatureV4({
    service: 'execute-api',
    region,
    credentials,
    sha256: Hash.bind(null, 'sha256'),
  });
  return async (url, init) => {
    const signed = await signer.sign(
      {
        method: init.method,
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        path: url.pathname,
        query: Object.fromEntries(url.searchParams.entries()),
        headers: { ...init.headers, host: url.host },
        ...(init.body === undefined ? {} : { body: init.body }),
      },
      signingDate ? { signingDate } : {},
    );
    return signed.headers;
  };
}
