/**
 * An HTTP proxy between a client and an API that injects faults: it answers a request itself (a 503
 * THROTTLED problem, API Gateway's 429) without passing it on, or passes it on and throws the answer
 * away by destroying the client's connection (a lost answer: the API acted, the client never heard).
 * Everything else is passed on untouched, the Host header included, so a SigV4 signature made for the
 * proxy's address is checked against that same address by an API that verifies signatures (the sim).
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault =
  | { kind: 'answer'; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'lose-answer' };

export interface FaultRule {
  method?: string;
  /** Matches the request's path (query included). */
  path?: RegExp;
  /** How many matching requests it takes (default 1). */
  times?: number;
  fault: Fault | ((body: string) => Fault);
}

export interface SeenRequest {
  method: string;
  path: string;
  body: string;
  /** What the proxy did: passed it on, answered it itself, or lost the API's answer. */
  action: 'forwarded' | 'answered' | 'lost-answer';
  /** The API's status (forwarded and lost-answer), or the proxy's own. */
  status?: number;
  /** The API's answer (forwarded and lost-answer): what the client got, or would have. */
  answer?: string;
}

export interface FaultProxy {
  url: string;
  seen: SeenRequest[];
  inject(rule: FaultRule): void;
  close(): Promise<void>;
}

export const throttledProblem = {
  type: 'about:blank',
  title: 'Service Unavailable',
  status: 503,
  code: 'THROTTLED',
  detail: 'The task table is throttling requests; retry after a short wait.',
};

/** `target`: the API's origin, e.g. http://127.0.0.1:3000. */
export async function startFaultProxy(
  target: string,
  options: { hostAsUpstream?: boolean } = {},
): Promise<FaultProxy> {
  const upstream = new URL(target);
  const rules: (FaultRule & { left: number })[] = [];
  const seen: SeenRequest[] = [];

  const server: Server = createServer((req, res) => {
    void readBody(req).then((body) => {
      const method = req.method ?? 'GET';
      const path = req.url ?? '/';
      const record: SeenRequest = { method, path, body, action: 'forwarded' };
      seen.push(record);
      const rule = rules.find(
        (r) => r.left > 0 && (!r.method || r.method === method) && (!r.path || r.path.test(path)),
      );
      if (rule) rule.left--;
      const fault = rule ? (typeof rule.fault === 'function' ? rule.fault(body) : rule.fault) : undefined;
      if (fault?.kind === 'answer') {
        record.action = 'answered';
        record.status = fault.status;
        const text = typeof fault.body === 'string' ? fault.body : JSON.stringify(fault.body);
        res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers });
        res.end(text);
        return;
      }
      const forward = httpRequest(
        {
          protocol: upstream.protocol,
          hostname: upstream.hostname,
          port: upstream.port,
          method,
          path,
          // Host as the client sent it (a signature covers it), or the upstream's own name as a reverse
          // proxy sends it (the local stack refuses a Host not its own).
          headers: options.hostAsUpstream ? { ...req.headers, host: upstream.host } : req.headers,
        },
        (answer) => {
          record.status = answer.statusCode;
          void readBody(answer).then((answerBody) => {
            record.answer = answerBody;
            if (fault?.kind === 'lose-answer') {
              record.action = 'lost-answer';
              req.socket.destroy();
              return;
            }
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(answerBody);
          });
        },
      );
      forward.on('error', () => req.socket.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    seen,
    inject: (rule) => rules.push({ ...rule, left: rule.times ?? 1 }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function readBody(stream: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
