/**
 * Lambda's asynchronous Invoke (`POST /2015-03-31/functions/{FunctionName}/invocations` with
 * `X-Amz-Invocation-Type: Event`, answered 202) over the SDK's own SigV4 signer and HTTP handler, in
 * place of `@aws-sdk/client-lambda`, whose schemas, endpoint rules and event-stream codec for 60-odd
 * operations were about 18 KB of each gzipped bundle that starts workers, for this one call.
 *
 * Kept from the SDK's client, because Lambda relies on them:
 * - the `X-Amzn-Trace-Id` of the invocation it is sent from (the SDK's recursion-detection
 *   middleware): Lambda's loop detection, and the sim's, count a chain's hops by it
 *   (fleet/chain-invoker.ts bounds those chains);
 * - the endpoint from `AWS_ENDPOINT_URL_LAMBDA` or `AWS_ENDPOINT_URL` (how the sim's functions reach it);
 * - a retry of throttling, server errors and dropped connections (two more attempts, within the
 *   caller's deadline), and each attempt signed afresh.
 */
import { InvokeStore } from '@aws/lambda-invoke-store';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { Hash } from '@smithy/hash-node';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider, HttpRequest } from '@smithy/types';
import { LeaseholdError } from '../errors.js';
import { TUNING } from '../tuning.js';

/** A refused or failed Invoke: Lambda's error type (e.g. TooManyRequestsException) and HTTP status. */
export class LambdaInvokeError extends LeaseholdError {
  override name = 'LambdaInvokeError';
  override readonly code = 'LAMBDA_INVOKE_FAILED';

  constructor(
    readonly type: string,
    readonly httpStatus: number | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${type}: ${message}`, options);
  }

  /** Throttling, a server error or a dropped connection: the same request may succeed. */
  get transient(): boolean {
    return this.httpStatus === undefined || this.httpStatus === 429 || this.httpStatus >= 500;
  }
}

export interface LambdaInvokeOptions {
  /** Default: AWS_REGION (set in every Lambda). */
  region?: string;
  /** Default: AWS_ENDPOINT_URL_LAMBDA, then AWS_ENDPOINT_URL, then Lambda's regional endpoint. */
  endpoint?: string;
  /** Default: the SDK's provider chain (in a bundle, the environment's: shared/lambda-credentials.ts). */
  credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
}

/** Lambda's regional endpoint (China's partition has its own domain). */
function regionalEndpoint(region: string): string {
  return `https://lambda.${region}.amazonaws.com${region.startsWith('cn-') ? '.cn' : ''}`;
}

/** The trace id the SDK's recursion-detection middleware would send from this invocation, if any. */
async function callerTraceId(): Promise<string | undefined> {
  if (!process.env.AWS_LAMBDA_FUNCTION_NAME) return undefined;
  const fromStore = (await InvokeStore.getInstanceAsync())?.getXRayTraceId();
  const traceId = fromStore ?? process.env._X_AMZN_TRACE_ID;
  return traceId ? traceId : undefined;
}

export class LambdaAsyncInvoke {
  private readonly url: URL;
  private readonly signer: SignatureV4;
  private readonly http = new NodeHttpHandler({ connectionTimeout: 1_000 });

  constructor(options: LambdaInvokeOptions = {}) {
    const region = options.region ?? process.env.AWS_REGION;
    if (!region) throw new LambdaInvokeError('ConfigError', undefined, 'no region: set AWS_REGION');
    this.url = new URL(
      options.endpoint ??
        process.env.AWS_ENDPOINT_URL_LAMBDA ??
        process.env.AWS_ENDPOINT_URL ??
        regionalEndpoint(region),
    );
    this.signer = new SignatureV4({
      service: 'lambda',
      region,
      credentials: options.credentials ?? defaultProvider(),
      sha256: Hash.bind(null, 'sha256'),
    });
  }

  /** Queues one asynchronous invocation of `functionName` (a name or an ARN) with `payload` (JSON). */
  async invoke(functionName: string, payload: string, signal: AbortSignal): Promise<void> {
    const request: HttpRequest = {
      method: 'POST',
      protocol: this.url.protocol,
      hostname: this.url.hostname,
      ...(this.url.port ? { port: Number(this.url.port) } : {}),
      path: `/2015-03-31/functions/${encodeURIComponent(functionName)}/invocations`,
      query: {},
      headers: {
        host: this.url.host,
        'content-type': 'application/octet-stream',
        'content-length': String(Buffer.byteLength(payload)),
        'x-amz-invocation-type': 'Event',
      },
      body: payload,
    };
    const traceId = await callerTraceId();
    if (traceId) request.headers['X-Amzn-Trace-Id'] = traceId;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt(request, signal);
      } catch (error) {
        const failure = asInvokeError(error);
        if (signal.aborted || attempt >= TUNING.kick.invokeAttempts || !failure.transient) throw failure;
        await new Promise((resolve) => setTimeout(resolve, TUNING.kick.invokeBackoffMs[attempt - 1]));
      }
    }
  }

  destroy(): void {
    this.http.destroy();
  }

  private async attempt(request: HttpRequest, signal: AbortSignal): Promise<void> {
    const signed = await this.signer.sign(request);
    const { response } = await this.http.handle(signed as never, { abortSignal: signal });
    const body = await readBody(response.body);
    if (response.statusCode === 202) return;
    throw errorOf(response.statusCode, response.headers, body);
  }
}

function asInvokeError(error: unknown): LambdaInvokeError {
  if (error instanceof LambdaInvokeError) return error;
  const e = error as Error;
  return new LambdaInvokeError(e?.name ?? 'Error', undefined, e?.message ?? String(error), { cause: error });
}

/** Lambda's error answer: its type in `x-amzn-errortype` (or the body's `Type`/`__type`), a JSON message. */
function errorOf(status: number, headers: Record<string, string>, body: string): LambdaInvokeError {
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(body) as Record<string, unknown>;
  } catch {
    // Not JSON (a proxy's page): the status says enough.
  }
  const header = Object.entries(headers).find(([k]) => k.toLowerCase() === 'x-amzn-errortype')?.[1];
  const type = (header ?? String(parsed.Type ?? parsed.__type ?? `HTTP${status}`)).split(':')[0]!;
  const message = String(parsed.message ?? parsed.Message ?? (body.slice(0, 200) || `status ${status}`));
  return new LambdaInvokeError(type.slice(type.lastIndexOf('#') + 1), status, message);
}

async function readBody(stream: unknown): Promise<string> {
  if (!stream || typeof (stream as AsyncIterable<unknown>)[Symbol.asyncIterator] !== 'function') return '';
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}
