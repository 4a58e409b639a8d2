/**
 * A DynamoDB fault proxy for the chaos harness: it sits between the workers and dynalite, picks the
 * operation from the X-Amz-Target header and, per request and at the configured rate, delays it,
 * answers a DynamoDB-shaped error, resets the connection before forwarding, or forwards it and then
 * drops the answer (the write applied; the caller never hears).
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FaultKind = 'delay' | 'throughput-exceeded' | 'throttling' | 'internal-error' | 'reset' | 'drop-answer';

export interface FaultProxyOptions {
  target: string;
  /** Probability that a request gets a fault at all. */
  rate: number;
  random?: () => number;
  /** Operations that may get faults (default: all). */
  operations?: string[];
}

export interface FaultProxy {
  endpoint: string;
  injected: Record<FaultKind, number>;
  requests: number;
  setRate(rate: number): void;
  close(): Promise<void>;
}

const ERRORS: Record<'throughput-exceeded' | 'throttling' | 'internal-error', { status: number; type: string; message: string }> = {
  'throughput-exceeded': { status: 400, type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException', message: 'The level of configured provisioned throughput for the table was exceeded (injected).' },
  throttling: { status: 400, type: 'com.amazon.coral.availability#ThrottlingException', message: 'Rate of requests exceeds the allowed throughput (injected).' },
  'internal-error': { status: 500, type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'Internal server error (injected).' },
};
const KINDS: FaultKind[] = ['delay', 'throughput-exceeded', 'throttling', 'internal-error', 'reset', 'drop-answer'];

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const random = options.random ?? Math.random;
  const target = new URL(options.target);
  let rate = options.rate;
  const injected = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  const state = { requests: 0 };

  const forward = (req: IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
      const upstream = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 500, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      });
      upstream.on('error', reject);
      upstream.end(body);
    });

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        state.requests++;
        const op = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
        const eligible = !options.operations || options.operations.includes(op);
        const kind = eligible && random() < rate ? KINDS[Math.floor(random() * KINDS.length)]! : undefined;
        if (kind) injected[kind]++;
        if (kind === 'reset') return req.socket.destroy();
        if (kind === 'throughput-exceeded' || kind === 'throttling' || kind === 'internal-error') {
          const e = ERRORS[kind];
          res.writeHead(e.status, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'injected' });
          return res.end(JSON.stringify({ __type: e.type, message: e.message }));
        }
        if (kind === 'delay') await new Promise((r) => setTimeout(r, 50 + random() * 250));
        try {
          const answer = await forward(req, Buffer.concat(chunks));
          if (kind === 'drop-answer') return req.socket.destroy();
          res.writeHead(answer.status, answer.headers);
          res.end(answer.body);
        } catch {
          req.socket.destroy();
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    injected,
    get requests() {
      return state.requests;
    },
    setRate: (r) => (rate = r),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
