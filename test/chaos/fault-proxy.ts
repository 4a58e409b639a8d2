/**
 * A DynamoDB fault proxy for the chaos harness: it sits between the workers and dynalite, picks the
 * operation from the X-Amz-Target header and, per request and at the configured rate, delays it,
 * answers a DynamoDB-shaped error, resets the connection before forwarding, or forwards it and then
 * drops the answer (the write applied; the caller never hears). With `indexLag`, index reads are
 * answered from a view of the table that trails it by up to `maxLagMs` (see ./index-lag.ts).
 *
 * A second endpoint, `cleanEndpoint`, injects no faults but routes the same way (the harness
 * enqueues through it, so the lagging index view hears of every write).
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { IndexLag, type IndexLagStats } from './index-lag.js';

export type FaultKind =
  'delay' | 'throughput-exceeded' | 'throttling' | 'internal-error' | 'reset' | 'drop-answer';

export interface FaultProxyOptions {
  target: string;
  /** Probability that a request gets a fault at all. */
  rate: number;
  random?: () => number;
  /** Operations that may get faults (default: all). */
  operations?: string[];
  /** Index reads served from a replica that trails the target by up to maxLagMs (off when absent or 0). */
  indexLag?: { replica: string; maxLagMs: number; random?: () => number };
  /**
   * A file the proxy appends one JSON line to per write request it forwarded or faulted: time, op,
   * key, the fault, DynamoDB's answer and whether the caller got it (the ground truth a failed run's
   * histories are read against).
   */
  journal?: string;
}

export interface StatusWrite {
  /** The item's partition key (`TASK#<id>` for a task). */
  pk: string;
  status: string;
  /** When the proxy had DynamoDB's answer. */
  t: number;
  /** Whether the caller got the answer (false: dropped by a fault, or the caller had given up). */
  delivered: boolean;
  /** 'yes': DynamoDB answered 200; 'unknown': the proxy's request to DynamoDB failed without an answer. */
  applied: 'yes' | 'unknown';
}

export interface FaultProxy {
  endpoint: string;
  /** The same routing without faults. */
  cleanEndpoint: string;
  /** The lagging index view's figures, when index lag is on. */
  indexLag: IndexLagStats | undefined;
  /** Claim writes seen (an UpdateItem on a task that adds to its lease token) and those refused by their condition: lost races. */
  claims: { sent: number; refused: number };
  /**
   * Every write that set an item's `status` and that DynamoDB applied (answered 200), whether or not
   * its caller heard the answer: the table's own record of each state change, in the order seen.
   */
  statusWrites: StatusWrite[];
  /** Writes the journal out (call before reading it). */
  flush(): Promise<void>;
  injected: Record<FaultKind, number>;
  requests: number;
  setRate(rate: number): void;
  close(): Promise<void>;
}

const ERRORS: Record<
  'throughput-exceeded' | 'throttling' | 'internal-error',
  { status: number; type: string; message: string }
> = {
  'throughput-exceeded': {
    status: 400,
    type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
    message: 'The level of configured provisioned throughput for the table was exceeded (injected).',
  },
  throttling: {
    status: 400,
    type: 'com.amazon.coral.availability#ThrottlingException',
    message: 'Rate of requests exceeds the allowed throughput (injected).',
  },
  'internal-error': {
    status: 500,
    type: 'com.amazonaws.dynamodb.v20120810#InternalServerError',
    message: 'Internal server error (injected).',
  },
};
const KINDS: FaultKind[] = [
  'delay',
  'throughput-exceeded',
  'throttling',
  'internal-error',
  'reset',
  'drop-answer',
];

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const random = options.random ?? Math.random;
  const target = new URL(options.target);
  let rate = options.rate;
  const injected = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  const state = { requests: 0 };
  const claims = { sent: 0, refused: 0 };
  const statusWrites: StatusWrite[] = [];
  const journal: WriteStream | undefined = options.journal ? createWriteStream(options.journal) : undefined;

  const lag =
    options.indexLag && options.indexLag.maxLagMs > 0
      ? new IndexLag({
          primary: options.target,
          replica: options.indexLag.replica,
          maxLagMs: options.indexLag.maxLagMs,
          ...(options.indexLag.random ? { random: options.indexLag.random } : {}),
        })
      : undefined;
  const replica = options.indexLag ? new URL(options.indexLag.replica) : target;

  const forward = (to: URL, req: IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>(
      (resolve, reject) => {
        const upstream = request(
          { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({ status: res.statusCode ?? 500, headers: res.headers, body: Buffer.concat(chunks) }),
            );
            res.on('error', reject);
          },
        );
        upstream.on('error', reject);
        upstream.end(body);
      },
    );

  const handle = async (req: IncomingMessage, res: ServerResponse, body: Buffer, faulty: boolean) => {
    state.requests++;
    const op = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
    const eligible = faulty && (!options.operations || options.operations.includes(op));
    const kind = eligible && random() < rate ? KINDS[Math.floor(random() * KINDS.length)]! : undefined;
    if (kind) injected[kind]++;
    if (kind === 'reset') return req.socket.destroy();
    if (kind === 'throughput-exceeded' || kind === 'throttling' || kind === 'internal-error') {
      const e = ERRORS[kind];
      res.writeHead(e.status, {
        'content-type': 'application/x-amz-json-1.0',
        'x-amzn-requestid': 'injected',
      });
      return res.end(JSON.stringify({ __type: e.type, message: e.message }));
    }
    if (kind === 'delay') await new Promise((r) => setTimeout(r, 50 + random() * 250));
    const indexRead = lag !== undefined && IndexLag.isIndexRead(op, body);
    if (indexRead) lag.noteIndexRead();
    let answer: Awaited<ReturnType<typeof forward>> | undefined;
    try {
      answer = await forward(indexRead ? replica : target, req, body);
    } catch {
      // Unknown whether the write applied: the lagging view reads the item back either way.
    }
    // A 4xx from DynamoDB (a failed condition, a bad request) applied nothing.
    if (lag && IndexLag.isWrite(op) && !(answer && answer.status >= 400 && answer.status < 500))
      void lag.noteWrite(op, body);
    const delivered = answer !== undefined && kind !== 'drop-answer' && !req.socket.destroyed;
    if (IndexLag.isWrite(op)) note(op, body, kind, answer, delivered);
    if (!delivered) return req.socket.destroy();
    res.writeHead(answer!.status, answer!.headers);
    res.end(answer!.body);
  };

  /** Counts claim writes and their lost races, and journals the write. */
  const note = (
    op: string,
    body: Buffer,
    kind: FaultKind | undefined,
    answer: { status: number; body: Buffer } | undefined,
    delivered: boolean,
  ) => {
    const error = answer && answer.status >= 400 ? errorType(answer.body) : undefined;
    let request: Record<string, any> | undefined;
    try {
      request = JSON.parse(body.toString('utf8')) as Record<string, any>;
    } catch {
      request = undefined;
    }
    const claim = op === 'UpdateItem' && request !== undefined && isClaim(request);
    // Applied: DynamoDB answered 200. Without any answer from DynamoDB (our connection to it failed), unknown.
    const status =
      request && (answer === undefined || answer.status === 200) ? statusSet(op, request) : undefined;
    const pk = ((request?.Key ?? request?.Item) as Record<string, { S?: string }> | undefined)?.pk?.S;
    if (status !== undefined && pk !== undefined)
      statusWrites.push({
        pk,
        status,
        t: Date.now(),
        delivered,
        applied: answer === undefined ? 'unknown' : 'yes',
      });
    if (claim) {
      claims.sent++;
      if (error === 'ConditionalCheckFailedException') claims.refused++;
    }
    if (journal) {
      journal.write(
        `${JSON.stringify({ t: Date.now(), op, pk, claim, fault: kind, status: answer?.status, error, delivered, body: body.toString('utf8').slice(0, 20_000) })}\n`,
      );
    }
  };

  const listen = async (faulty: boolean) => {
    const server: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => void handle(req, res, Buffer.concat(chunks), faulty));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return server;
  };
  const servers = [await listen(true), await listen(false)];
  const endpointOf = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint: endpointOf(servers[0]!),
    cleanEndpoint: endpointOf(servers[1]!),
    injected,
    get requests() {
      return state.requests;
    },
    indexLag: lag?.stats,
    claims,
    statusWrites,
    flush: () =>
      journal && !journal.closed
        ? new Promise<void>((resolve) => journal.end(() => resolve()))
        : Promise.resolve(),
    setRate: (r) => (rate = r),
    close: async () => {
      await lag?.close();
      if (journal && !journal.closed) await new Promise<void>((resolve) => journal.end(() => resolve()));
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              server.closeAllConnections();
            }),
        ),
      );
    },
  };
}

/** DynamoDB's error type from an error answer ("...#ConditionalCheckFailedException" -> the last part). */
function errorType(body: Buffer): string | undefined {
  try {
    const type = (JSON.parse(body.toString('utf8')) as { __type?: string }).__type;
    return type?.slice(type.lastIndexOf('#') + 1);
  } catch {
    return undefined;
  }
}

/** A claim: an update of a task item that adds to its lease token (only a claim moves the token). */
function isClaim(request: Record<string, any>): boolean {
  const pk = request.Key?.pk?.S;
  const add = /\bADD\s+(.*)$/.exec(String(request.UpdateExpression ?? ''))?.[1];
  if (typeof pk !== 'string' || !pk.startsWith('TASK#') || !add) return false;
  const names = (request.ExpressionAttributeNames ?? {}) as Record<string, string>;
  return add.split(',').some((part) => {
    const target = part.trim().split(/\s+/)[0] ?? '';
    return (names[target] ?? target) === 'leaseToken';
  });
}

/** The status a PutItem or UpdateItem sets (`SET ... status = :v` in its update expression), if any. */
export function statusSet(op: string, request: Record<string, any>): string | undefined {
  if (op === 'PutItem') return request.Item?.status?.S as string | undefined;
  if (op !== 'UpdateItem') return undefined;
  const set = /\bSET\s+(.*?)(?:\s+\b(?:REMOVE|ADD|DELETE)\b|$)/.exec(
    String(request.UpdateExpression ?? ''),
  )?.[1];
  if (!set) return undefined;
  const names = (request.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (request.ExpressionAttributeValues ?? {}) as Record<string, { S?: string }>;
  for (const m of set.matchAll(/([#\w]+)\s*=\s*(:\w+)/g))
    if ((names[m[1]!] ?? m[1]) === 'status') return values[m[2]!]?.S;
  return undefined;
}
