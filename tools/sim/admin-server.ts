/**
 * The sim's own inspection endpoint (not an AWS API): what each function did, every authorization
 * decision, the grants nothing used, the schedules and their fires, the queues' messages, DynamoDB's
 * throttled requests, pending GSI copies and TTL deletions. Tests and
 * `leasehold sim` read it; POST /functions/<logicalId>/invoke starts an asynchronous invocation as
 * a schedule would (for trying a function without waiting for its tick).
 */
import { createServer } from 'node:http';
import { listenOnLoopback } from './loopback-server.js';
import type { AccessLog } from './iam/access-log.js';
import type { IdentityStore } from './iam/identity-store.js';
import type { LambdaService } from './lambda/lambda-service.js';
import type { SimScheduler } from './scheduler-from-template.js';
import type { SimInfo } from './sim-info.js';
import type { LocalQueues } from './sqs/local-queues.js';
import type { IamGate } from './dynamodb/iam-gate.js';

export interface AdminDeps {
  info: SimInfo;
  lambda: LambdaService;
  accessLog: AccessLog;
  identities: IdentityStore;
  scheduler: SimScheduler;
  queues: LocalQueues;
  /** The DynamoDB gate: `dynamodb` in GET /state is its stats(). */
  dynamodb?: Pick<IamGate, 'stats'>;
}

export async function startAdminServer(deps: AdminDeps): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const send = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const url = new URL(req.url ?? '/', 'http://sim');
      try {
        if (req.method === 'GET' && url.pathname === '/state') {
          const since = Number(url.searchParams.get('since') ?? 0);
          return send(200, {
            info: deps.info,
            functions: deps.lambda.stats(),
            requests: deps.accessLog.summary(since),
            denied: deps.accessLog.denied(),
            grants: deps.identities.grants(),
            schedules: deps.scheduler.scheduler.schedules(),
            fires: deps.scheduler.scheduler.fires(),
            queues: deps.queues.list(),
            ...(deps.dynamodb ? { dynamodb: deps.dynamodb.stats() } : {}),
          });
        }
        if (req.method === 'GET' && url.pathname === '/access')
          return send(
            200,
            deps.accessLog.all().filter((r) => r.at >= Number(url.searchParams.get('since') ?? 0)),
          );
        const invoke = /^\/functions\/([A-Za-z0-9]+)\/invoke$/.exec(url.pathname);
        if (req.method === 'POST' && invoke) {
          const fn = deps.lambda.definitions().find((d) => d.logicalId === invoke[1]);
          if (!fn) return send(404, { message: `no function ${invoke[1]}` });
          const admin = deps.identities.callers().find((c) => c.name === 'admin')!;
          return send(
            202,
            deps.lambda.invokeAsync(fn.arn, Buffer.concat(chunks).toString('utf8') || '{}', {
              principalArn: admin.arn,
            }),
          );
        }
        return send(404, { message: 'GET /state, GET /access?since=, POST /functions/<logicalId>/invoke' });
      } catch (error) {
        return send(500, { message: String(error) });
      }
    });
  });
  const { port, close } = await listenOnLoopback(server);
  return { url: `http://127.0.0.1:${port}`, close };
}
