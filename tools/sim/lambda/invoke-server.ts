/**
 * Lambda's Invoke API (lambda-2015-03-31, REST-JSON) on node:http, so that functions and local tools
 * call the sim's functions with `@aws-sdk/client-lambda` exactly as they would call Lambda:
 * `POST /2015-03-31/functions/{FunctionName}/invocations`, the invocation type in
 * `X-Amz-Invocation-Type`, the qualifier in the name or in `?Qualifier=`, the caller's trace header
 * in `X-Amzn-Trace-Id` (its Lineage makes the invocation a hop of that chain). Every request's SigV4
 * signature is checked (service "lambda") and the caller's `lambda:InvokeFunction` permission is
 * decided by the LambdaService itself, which logs it. Errors go out as Lambda sends them
 * (`x-amzn-errortype` and a JSON body with `Type` and `message`/`Message`), which the SDK turns into
 * its exception classes.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from '../loopback-server.js';
import type { AccessLog } from '../iam/access-log.js';
import type { IdentityStore } from '../iam/identity-store.js';
import { awsErrorType, verifySigV4 } from '../iam/sigv4-verifier.js';
import { LambdaError } from './lambda-error.js';
import type { LambdaService } from './lambda-service.js';

/** Lambda's request quotas (Lambda quotas page; asynchronous raised from 256 KB to 1 MB in 2025). */
export const INVOKE_PAYLOAD_LIMITS = {
  /** RequestResponse (and DryRun): 6 MB. */
  syncBytes: 6 * 1024 * 1024,
  /** Event: 1 MB. */
  asyncBytes: 1024 * 1024,
} as const;

const INVOCATION_TYPES = ['RequestResponse', 'Event', 'DryRun'] as const;
type InvocationType = (typeof INVOCATION_TYPES)[number];

/** The documented FunctionName pattern: name, partial ARN or ARN, each with an optional qualifier. */
const FUNCTION_NAME =
  /^(?:arn:(?:aws[a-zA-Z-]*)?:lambda:)?(?:([a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-\d):)?(?:(\d{12}):)?(?:function:)?([a-zA-Z0-9-_.]+)(?::(\$LATEST|[a-zA-Z0-9-_]+))?$/;

const PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations\/?$/;

export interface InvokeServerOptions {
  region: string;
  accountId: string;
  identities: Pick<IdentityStore, 'byAccessKey' | 'isAllowed'>;
  /** The service that runs the functions (may be bound after the server starts: functions need its URL first). */
  lambda: Pick<LambdaService, 'invoke' | 'invokeAsync' | 'definitions'>;
  log: AccessLog;
  port?: number;
}

export interface InvokeServer {
  endpoint: string;
  close(): Promise<void>;
}

/** An answer Lambda gives without running the function. */
class InvokeRefusal extends Error {
  constructor(
    readonly type: string,
    readonly status: number,
    message: string,
    readonly extra: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The member the SDK's error shapes read the text from: `Message` on some, `message` on the others. */
const CAPITAL_MESSAGE = new Set([
  'ResourceNotFoundException',
  'ServiceException',
  'AccessDeniedException',
  'RecursiveInvocationException',
]);

function sendError(res: ServerResponse, e: InvokeRefusal): void {
  const body = JSON.stringify({
    Type: e.status >= 500 ? 'Service' : 'User',
    [CAPITAL_MESSAGE.has(e.type) ? 'Message' : 'message']: e.message,
    ...e.extra,
  });
  res.writeHead(e.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-amzn-requestid': crypto.randomUUID(),
    'x-amzn-errortype': e.type,
  });
  res.end(body);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The unqualified ARN the request names, in this account and region (the sim has no versions or aliases). */
export function functionArnOf(
  rawName: string,
  queryQualifier: string | undefined,
  region: string,
  accountId: string,
): string {
  const m = FUNCTION_NAME.exec(rawName);
  if (!m || rawName.length > 256)
    throw new InvokeRefusal(
      'ValidationException',
      400,
      `1 validation error detected: Value '${rawName}' at 'functionName' failed to satisfy constraint: Member must satisfy regular expression pattern: ${FUNCTION_NAME.source}`,
    );
  const [, arnRegion, arnAccount, name, nameQualifier] = m as unknown as [
    string,
    string | undefined,
    string | undefined,
    string,
    string | undefined,
  ];
  const arn = `arn:aws:lambda:${region}:${accountId}:function:${name}`;
  if (arnRegion && arnRegion !== region)
    throw new InvokeRefusal(
      'ResourceNotFoundException',
      404,
      `Functions from '${arnRegion}' are not reachable in this region ('${region}')`,
    );
  if (arnAccount && arnAccount !== accountId)
    throw new InvokeRefusal(
      'ResourceNotFoundException',
      404,
      `Function not found: arn:aws:lambda:${region}:${arnAccount}:function:${name}`,
    );
  if (nameQualifier && queryQualifier && nameQualifier !== queryQualifier)
    throw new InvokeRefusal(
      'InvalidParameterValueException',
      400,
      'The derived qualifier from the function name does not match the specified qualifier.',
    );
  const qualifier = nameQualifier ?? queryQualifier;
  if (qualifier !== undefined && qualifier !== '$LATEST')
    throw new InvokeRefusal('ResourceNotFoundException', 404, `Function not found: ${arn}:${qualifier}`);
  return arn;
}

function invocationTypeOf(header: string | string[] | undefined): InvocationType {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value === '') return 'RequestResponse';
  if ((INVOCATION_TYPES as readonly string[]).includes(value)) return value as InvocationType;
  throw new InvokeRefusal(
    'ValidationException',
    400,
    `1 validation error detected: Value '${value}' at 'invocationType' failed to satisfy constraint: Member must satisfy enum value set: [${INVOCATION_TYPES.join(', ')}]`,
  );
}

/** The event the function gets: the body as sent, which must be JSON (an empty body is `{}`, as on Lambda). */
function payloadOf(body: Buffer, type: InvocationType): string {
  const limit = type === 'Event' ? INVOKE_PAYLOAD_LIMITS.asyncBytes : INVOKE_PAYLOAD_LIMITS.syncBytes;
  if (body.length > limit)
    throw new InvokeRefusal(
      'RequestTooLargeException',
      413,
      `Request must be smaller than ${limit} bytes for the InvokeFunction operation`,
    );
  const text = body.length === 0 ? '{}' : body.toString('utf8');
  try {
    JSON.parse(text);
  } catch (error) {
    throw new InvokeRefusal(
      'InvalidRequestContentException',
      400,
      `Could not parse request body into json: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return text;
}

/** TooManyRequestsException carries the reason Lambda names (the LambdaService puts it in parentheses). */
function refusalOf(error: LambdaError): InvokeRefusal {
  if (error.code !== 'TooManyRequestsException')
    return new InvokeRefusal(error.code, error.status, error.message);
  const reason = /\((\w+)\)$/.exec(error.message)?.[1];
  return new InvokeRefusal(
    error.code,
    error.status,
    error.message.replace(/ \(\w+\)$/, ''),
    reason ? { Reason: reason } : {},
  );
}

export async function startInvokeServer(options: InvokeServerOptions): Promise<InvokeServer> {
  const { identities, region, accountId } = options;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req);
    const [path, query = ''] = (req.url ?? '/').split('?') as [string, string?];
    const verified = await verifySigV4(
      // Lambda, as every service but S3, signs the path as sent (already encoded, e.g. an ARN's ':' as %3A).
      { method: req.method ?? 'POST', path, query, headers: req.headers, body, pathAsSent: true },
      (key) => identities.byAccessKey(key)?.credentials,
      'lambda',
    );
    if (!verified.ok) throw new InvokeRefusal(awsErrorType(verified.reason), 403, verified.message);
    if (verified.region !== region)
      throw new InvokeRefusal(
        'InvalidSignatureException',
        403,
        `Credential should be scoped to a valid region. (signed for '${verified.region}', this endpoint is '${region}')`,
      );
    const principalArn = identities.byAccessKey(verified.accessKeyId)!.arn;

    const route = PATH.exec(path);
    if (!route || req.method !== 'POST')
      throw new InvokeRefusal('UnknownOperationException', 404, `No operation at ${req.method} ${path}`);
    const qualifier = new URLSearchParams(query).get('Qualifier') ?? undefined;
    const arn = functionArnOf(decodeURIComponent(route[1]!), qualifier, region, accountId);
    const type = invocationTypeOf(req.headers['x-amz-invocation-type']);
    const payload = payloadOf(body, type);
    const caller = { principalArn };
    // What the AWS SDK's recursion-detection middleware sends from inside a function: its trace id.
    const traceHeader = [req.headers['x-amzn-trace-id']].flat()[0];

    if (type === 'Event') {
      const { requestId } = options.lambda.invokeAsync(arn, payload, caller, traceHeader);
      res.writeHead(202, { 'content-length': 0, 'x-amzn-requestid': requestId }).end();
      return;
    }
    if (type === 'DryRun') {
      // Nothing runs: only whether the function exists and the caller may invoke it (logged like any decision).
      if (!options.lambda.definitions().some((d) => d.arn === arn))
        throw new InvokeRefusal('ResourceNotFoundException', 404, `Function not found: ${arn}`);
      const allowed = identities.isAllowed(principalArn, 'lambda:InvokeFunction', arn);
      options.log.add({
        at: Date.now(),
        service: 'lambda',
        principalArn,
        action: 'lambda:InvokeFunction',
        resource: arn,
        allowed,
      });
      if (!allowed)
        throw new InvokeRefusal(
          'AccessDeniedException',
          403,
          `User: ${principalArn} is not authorized to perform: lambda:InvokeFunction on resource: ${arn}`,
        );
      res.writeHead(204, { 'x-amzn-requestid': crypto.randomUUID() }).end();
      return;
    }
    const result = await options.lambda.invoke(arn, payload, caller, traceHeader);
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(result.payload),
      'x-amzn-requestid': result.requestId,
      'x-amz-executed-version': '$LATEST',
      ...(result.functionError ? { 'x-amz-function-error': result.functionError } : {}),
    });
    res.end(result.payload);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.destroy();
      if (error instanceof InvokeRefusal) return sendError(res, error);
      if (error instanceof LambdaError) return sendError(res, refusalOf(error));
      sendError(
        res,
        new InvokeRefusal('ServiceException', 500, error instanceof Error ? error.message : String(error)),
      );
    });
  });
  const { port, close } = await listenOnLoopback(server, options.port);
  return { endpoint: `http://127.0.0.1:${port}`, close };
}
