/**
 * The DynamoDB endpoint the sim's functions call: it verifies each request's SigV4 signature, checks
 * the action (from X-Amz-Target) on the table or index ARN against the caller's IAM policies (with
 * dynamodb:LeadingKeys, the partition values the request touches: leading-keys.ts), and on
 * a table encrypted with a customer-managed key also checks kms:Decrypt (DynamoDB uses the table key as
 * the caller), answering AccessDeniedException as DynamoDB does; what is allowed goes on to the real
 * emulator behind it, through strict-dynamodb.ts (GSI lag, on-demand throttling, TTL deletes).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listenOnLoopback } from '../loopback-server.js';
import type { AccessLog } from '../iam/access-log.js';
import type { IdentityStore } from '../iam/identity-store.js';
import { awsErrorType, verifySigV4 } from '../iam/sigv4-verifier.js';
import { leadingKeys } from './leading-keys.js';
import { StrictDynamoDb, type StrictOptions } from './strict-dynamodb.js';
import type { WarmRates } from './table-from-template.js';

export interface GatedTable {
  name: string;
  arn: string;
  /** The customer-managed key the table is encrypted with, if any. */
  kmsKeyArn?: string;
  /** The table's TTL attribute (TimeToLiveSpecification), if TTL is enabled. */
  ttlAttribute?: string;
  /** Warm throughput of the table and its GSIs, where the template sets it (warmThroughputOf). */
  warm?: Map<string, WarmRates>;
}

export interface IamGateOptions extends StrictOptions {
  backend: string;
  region: string;
  tables: GatedTable[];
  identities: IdentityStore;
  log: AccessLog;
}

/** The resources a DynamoDB request acts on, as IAM sees them. */
export function requestResources(
  operation: string,
  body: Record<string, unknown>,
  arnOf: (table: string) => string,
): string[] {
  const tableArn = (name: unknown) => arnOf(String(name));
  switch (operation) {
    case 'BatchGetItem':
    case 'BatchWriteItem':
      return Object.keys((body.RequestItems as Record<string, unknown>) ?? {}).map(tableArn);
    case 'TransactGetItems':
    case 'TransactWriteItems':
      return ((body.TransactItems as Record<string, { TableName: string }>[]) ?? []).map((item) =>
        tableArn(Object.values(item)[0]!.TableName),
      );
    case 'ListTables':
      return [`${arnOf('*')}`];
    case 'Query':
    case 'Scan':
      return [
        body.IndexName
          ? `${tableArn(body.TableName)}/index/${String(body.IndexName)}`
          : tableArn(body.TableName),
      ];
    default:
      return [tableArn(body.TableName)];
  }
}

const denied = (res: ServerResponse, message: string) => {
  const payload = JSON.stringify({
    __type: 'com.amazon.coral.service#AccessDeniedException',
    Message: message,
  });
  res
    .writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': `sim-${Date.now()}` })
    .end(payload);
};

export interface IamGate {
  endpoint: string;
  server: Server;
  /** Throttled requests, the index lag's pending copies, TTL deletions (GET /state's `dynamodb`). */
  stats(): ReturnType<StrictDynamoDb['stats']>;
  /** Runs a TTL sweep now (tests). */
  sweepTtl(): Promise<void>;
  close(): Promise<void>;
}

export async function startIamGate(options: IamGateOptions): Promise<IamGate> {
  const { identities, log } = options;
  const arnOf = (table: string) =>
    options.tables.find((t) => t.name === table)?.arn ??
    `arn:aws:dynamodb:${options.region}:${identities.accountId}:table/${table}`;
  const strict = await StrictDynamoDb.start(options.backend, options.tables, options);

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const [path, query = ''] = (req.url ?? '/').split('?') as [string, string?];
    const verified = await verifySigV4(
      { method: req.method ?? 'POST', path, query, headers: req.headers, body },
      (key) => identities.byAccessKey(key)?.credentials,
      'dynamodb',
    );
    if (!verified.ok) {
      res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' }).end(
        JSON.stringify({
          __type: `com.amazon.coral.service#${awsErrorType(verified.reason)}`,
          message: verified.message,
        }),
      );
      return;
    }
    const principal = identities.byAccessKey(verified.accessKeyId)!;
    const operation = String(req.headers['x-amz-target'] ?? '').replace(/^DynamoDB_\d+\./, '');
    const action = `dynamodb:${operation}`;
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(body.toString('utf8') || '{}') as Record<string, unknown>;
    } catch {
      // The backend answers a malformed body as DynamoDB does.
    }
    const keys = leadingKeys(operation, parsed, (table) => strict.schemaOf(table));
    const context = keys === undefined ? undefined : { 'dynamodb:LeadingKeys': keys };
    for (const resource of requestResources(operation, parsed, arnOf)) {
      const allowed = identities.isAllowed(principal.arn, action, resource, context);
      log.add({
        at: Date.now(),
        service: 'dynamodb',
        principalArn: principal.arn,
        action,
        resource,
        allowed,
      });
      if (!allowed)
        return denied(
          res,
          `User: ${principal.arn} is not authorized to perform: ${action} on resource: ${resource} because no identity-based policy allows the ${action} action`,
        );
      const table = options.tables.find((t) => resource === t.arn || resource.startsWith(`${t.arn}/index/`));
      if (table?.kmsKeyArn) {
        const keyAllowed = identities.isAllowed(principal.arn, 'kms:Decrypt', table.kmsKeyArn, {
          'kms:ViaService': `dynamodb.${options.region}.amazonaws.com`,
        });
        log.add({
          at: Date.now(),
          service: 'dynamodb',
          principalArn: principal.arn,
          action: 'kms:Decrypt',
          resource: table.kmsKeyArn,
          allowed: keyAllowed,
        });
        if (!keyAllowed)
          return denied(
            res,
            'KMS key access denied error: com.amazonaws.services.kms.model.AWSKMSException: The ciphertext refers to a customer master key that does not exist, does not exist in this region, or you are not allowed to access. (Service: AWSKMS; Status Code: 400; Error Code: AccessDeniedException)',
          );
      }
    }
    let answer;
    try {
      answer = await strict.handle(
        operation,
        parsed,
        body,
        req.method ?? 'POST',
        req.url ?? '/',
        req.headers,
      );
    } catch (error) {
      res.writeHead(500, { 'content-type': 'application/x-amz-json-1.0' }).end(
        JSON.stringify({
          __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError',
          message: `sim: backend unreachable: ${(error as Error).message}`,
        }),
      );
      return;
    }
    const headers = { ...answer.headers, 'content-length': String(answer.body.length) };
    delete headers['transfer-encoding'];
    res.writeHead(answer.status, headers).end(answer.body);
  };

  const inflight = new Set<Promise<void>>();
  const server = createServer((req, res) => {
    const handled = handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        res.writeHead(500, { 'content-type': 'application/x-amz-json-1.0' }).end(
          JSON.stringify({
            __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError',
            message: String(error),
          }),
        );
    });
    inflight.add(handled);
    void handled.then(() => inflight.delete(handled));
  });
  const { port } = await listenOnLoopback(server);
  let closing: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    server,
    stats: () => strict.stats(),
    sweepTtl: () => strict.sweepTtl(),
    // The server stops taking requests first; those in flight are answered by a live backend.
    close: () =>
      (closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        while (inflight.size > 0) await Promise.all([...inflight]);
        // Keep-alive connections, now idle, would hold the close open.
        server.closeAllConnections();
        await stopped;
        await strict.close();
      })()),
  };
}
