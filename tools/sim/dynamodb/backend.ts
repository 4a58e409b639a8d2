/**
 * The emulator behind the IAM gate, spoken to over plain HTTP: client requests are forwarded with
 * their headers (DynamoDB Local and dynalite do not check signatures), and the gate's own requests
 * (snapshots of items, copies into the index view, TTL sweeps) go as unsigned-but-well-formed JSON
 * calls, much cheaper than an SDK client's middleware stack on a small machine.
 */
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';

export interface BackendAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** An error answer from the backend, with DynamoDB's error type (e.g. ConditionalCheckFailedException). */
export class BackendError extends Error {
  override name = 'BackendError';
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(`${type}: ${message}`);
  }
}

/** The short error type of a DynamoDB error body (`com.amazonaws.dynamodb.v20120810#X` -> `X`). */
export function errorType(body: Buffer | string): string {
  try {
    const parsed = JSON.parse(String(body)) as { __type?: string };
    return String(parsed.__type ?? '').replace(/^.*#/, '');
  } catch {
    return '';
  }
}

export class Backend {
  private readonly url: URL;
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });

  constructor(endpoint: string) {
    this.url = new URL(endpoint);
  }

  /** Sends a body with these headers (a client's request, possibly rewritten) and buffers the answer. */
  send(method: string, path: string, headers: IncomingHttpHeaders, body: Buffer): Promise<BackendAnswer> {
    return new Promise((resolve, reject) => {
      const forward = httpRequest(
        {
          hostname: this.url.hostname,
          port: this.url.port,
          method,
          path,
          agent: this.agent,
          headers: { ...headers, host: this.url.host, 'content-length': String(body.length) },
        },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (c: Buffer) => chunks.push(c));
          answer.on('end', () =>
            resolve({
              status: answer.statusCode ?? 500,
              headers: answer.headers,
              body: Buffer.concat(chunks),
            }),
          );
          answer.on('error', reject);
        },
      );
      forward.on('error', reject);
      forward.end(body);
    });
  }

  /** One DynamoDB API call made by the sim itself; throws BackendError on an error answer. */
  async call<T = Record<string, unknown>>(operation: string, input: unknown): Promise<T> {
    const answer = await this.send(
      'POST',
      '/',
      {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': `DynamoDB_20120810.${operation}`,
        'x-amz-date': '20250101T000000Z',
        // DynamoDB Local wants a well-formed Authorization header; neither emulator checks the signature.
        authorization:
          'AWS4-HMAC-SHA256 Credential=tools/sim/20250101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0',
      },
      Buffer.from(JSON.stringify(input)),
    );
    if (answer.status !== 200) {
      const parsed = JSON.parse(answer.body.toString('utf8') || '{}') as {
        message?: string;
        Message?: string;
      };
      throw new BackendError(
        errorType(answer.body),
        parsed.message ?? parsed.Message ?? `HTTP ${answer.status}`,
      );
    }
    return JSON.parse(answer.body.toString('utf8') || '{}') as T;
  }

  close(): void {
    this.agent.destroy();
  }
}
