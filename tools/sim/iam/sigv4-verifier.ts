/**
 * Checks a request's SigV4 signature the way AWS does: finds the secret of the access key, signs the
 * same canonical request (the headers the client listed in SignedHeaders, the body's hash) with
 * smithy's SignatureV4 at the client's own date, and compares. No signer is written here.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface IncomingSignedRequest {
  method: string;
  /** Path as sent, still percent-encoded. */
  path: string;
  /**
   * Put the path into the canonical request as sent, not decoded first: what AWS does for every service
   * but S3 (the signer encodes the already-encoded path again, so an ARN's `%3A` becomes `%253A`).
   * Without it the path is decoded first, as before.
   */
  pathAsSent?: boolean;
  /** Query string as sent, without `?`. */
  query: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export type VerifyResult =
  | { ok: true; accessKeyId: string; region: string; service: string }
  | {
      ok: false;
      reason: 'unsigned' | 'malformed' | 'unknown-key' | 'bad-signature' | 'expired' | 'wrong-service';
      message: string;
    };

/** The error type an AWS JSON service answers for a refused signature. */
export function awsErrorType(reason: Exclude<VerifyResult, { ok: true }>['reason']): string {
  if (reason === 'unknown-key') return 'UnrecognizedClientException';
  if (reason === 'unsigned') return 'MissingAuthenticationTokenException';
  return 'InvalidSignatureException';
}

/** AWS refuses a signature whose date is more than 15 minutes off. */
const MAX_SKEW_MS = 15 * 60_000;

const header = (headers: IncomingSignedRequest['headers'], name: string) => {
  const v = headers[name];
  return Array.isArray(v) ? v.join(',') : v;
};

function parseAmzDate(text: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  return m ? new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!)) : undefined;
}

export async function verifySigV4(
  request: IncomingSignedRequest,
  secretOf: (accessKeyId: string) => Credentials | undefined,
  expectedService: string,
  now = Date.now(),
): Promise<VerifyResult> {
  const authorization = header(request.headers, 'authorization');
  if (!authorization) return { ok: false, reason: 'unsigned', message: 'Missing Authentication Token' };
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
      authorization.trim(),
    );
  if (!m)
    return {
      ok: false,
      reason: 'malformed',
      message: 'Authorization header requires Credential, SignedHeaders and Signature (AWS4-HMAC-SHA256).',
    };
  const [, accessKeyId, , region, service, signedHeaderList, signature] = m as unknown as string[];
  if (service !== expectedService)
    return {
      ok: false,
      reason: 'wrong-service',
      message: `Credential should be scoped to correct service: '${expectedService}'.`,
    };
  const credentials = secretOf(accessKeyId!);
  if (!credentials)
    return {
      ok: false,
      reason: 'unknown-key',
      message: 'The security token included in the request is invalid.',
    };
  const amzDate = header(request.headers, 'x-amz-date');
  const signingDate = amzDate ? parseAmzDate(amzDate) : undefined;
  if (!signingDate) return { ok: false, reason: 'malformed', message: 'Missing or malformed X-Amz-Date.' };
  if (Math.abs(now - signingDate.getTime()) > MAX_SKEW_MS)
    return {
      ok: false,
      reason: 'expired',
      message: 'Signature expired: the request time is more than 15 minutes from the server time.',
    };
  // A signed x-amz-content-sha256 stands in for the body in the signature: it must be the body's hash.
  const declaredHash = header(request.headers, 'x-amz-content-sha256');
  if (
    declaredHash &&
    declaredHash !== 'UNSIGNED-PAYLOAD' &&
    declaredHash !== createHash('sha256').update(request.body).digest('hex')
  ) {
    return {
      ok: false,
      reason: 'bad-signature',
      message: 'The provided x-amz-content-sha256 header does not match what was computed.',
    };
  }
  const names = signedHeaderList!.split(';');
  const headers: Record<string, string> = {};
  for (const name of names) headers[name] = header(request.headers, name) ?? '';
  const query: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(request.query))
    query[k] = k in query ? [query[k]!].flat().concat(v) : v;
  // Temporary credentials are only valid with their session token (AWS answers as for an unknown key).
  if (
    credentials.sessionToken !== undefined &&
    header(request.headers, 'x-amz-security-token') !== credentials.sessionToken
  ) {
    return {
      ok: false,
      reason: 'unknown-key',
      message: 'The security token included in the request is invalid.',
    };
  }
  // Exactly the client's signed headers go in (the signer signs all it is given); the token is among them.
  const signer = new SignatureV4({
    service: service!,
    region: region!,
    credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey },
    sha256: Hash.bind(null, 'sha256'),
  });
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: 'http:',
      hostname: String(headers.host ?? '').split(':')[0]!,
      path: request.pathAsSent ? request.path : decodeURIComponent(request.path),
      query,
      headers,
      body: request.body,
    },
    { signingDate, signableHeaders: new Set(names), unsignableHeaders: new Set() },
  );
  const expected = /Signature=([0-9a-f]{64})/.exec(String(signed.headers.authorization))?.[1] ?? '';
  const same =
    expected.length === signature!.length && timingSafeEqual(Buffer.from(expected), Buffer.from(signature!));
  if (!same) {
    return {
      ok: false,
      reason: 'bad-signature',
      message:
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
    };
  }
  return { ok: true, accessKeyId: accessKeyId!, region: region!, service: service! };
}
