/**
 * Scheduler's REST-JSON wire protocol on node:http (scheduler-2021-06-30 model): POST/PUT/GET/DELETE
 * /schedules/{Name} (Create/Update/Get/Delete; groupName in the query for Get/Delete, in the body for
 * Create/Update) and GET /schedules (List). Errors as rest-json services send them: `x-amzn-errortype`
 * header and `{"Message": ...}` body, which the SDK maps to its exception classes.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SchedulerError } from './errors.js';
import type { SchedulerAuth, SchedulerCaller } from './ports.js';

export interface RestJsonServer {
  url: string;
  close(): Promise<void>;
}

/** The operations the server routes to (LocalScheduler). */
export interface SchedulerApi {
  createSchedule(caller: SchedulerCaller, name: string, body: Record<string, unknown>): unknown;
  updateSchedule(caller: SchedulerCaller, name: string, body: Record<string, unknown>): unknown;
  deleteSchedule(caller: SchedulerCaller, name: string, group: string | undefined): unknown;
  getSchedule(caller: SchedulerCaller, name: string, group: string | undefined): unknown;
  listSchedules(caller: SchedulerCaller, query: URLSearchParams): unknown;
}

function send(res: ServerResponse, status: number, body: unknown, errorType?: string): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': crypto.randomUUID(),
    ...(errorType ? { 'x-amzn-errortype': errorType } : {}),
  });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function route(api: SchedulerApi, caller: SchedulerCaller, method: string, url: URL, body: string): unknown {
  const parts = url.pathname.split('/').filter(Boolean);
  if (parts[0] !== 'schedules' || parts.length > 2)
    throw new SchedulerError('UnknownOperationException', `No operation at ${method} ${url.pathname}`);
  if (parts.length === 1) {
    if (method !== 'GET')
      throw new SchedulerError('UnknownOperationException', `No operation at ${method} ${url.pathname}`);
    return api.listSchedules(caller, url.searchParams);
  }
  const name = decodeURIComponent(parts[1]!);
  const group = url.searchParams.get('groupName') ?? undefined;
  const json = (): Record<string, unknown> => {
    try {
      const parsed: unknown = body ? JSON.parse(body) : {};
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
        return parsed as Record<string, unknown>;
    } catch {
      // fall through
    }
    throw new SchedulerError('ValidationException', 'The request body is not a JSON object.');
  };
  switch (method) {
    case 'POST':
      return api.createSchedule(caller, name, json());
    case 'PUT':
      return api.updateSchedule(caller, name, json());
    case 'GET':
      return api.getSchedule(caller, name, group);
    case 'DELETE':
      return api.deleteSchedule(caller, name, group);
    default:
      throw new SchedulerError('UnknownOperationException', `No operation at ${method} ${url.pathname}`);
  }
}

export async function startRestJsonServer(
  api: SchedulerApi,
  auth: SchedulerAuth,
  port: number,
): Promise<RestJsonServer> {
  const server = createServer((req, res) => {
    void (async () => {
      try {
        const body = await readBody(req);
        const url = new URL(req.url ?? '/', 'http://127.0.0.1');
        const method = req.method ?? 'GET';
        const who = await auth.authenticate({
          method,
          path: url.pathname,
          query: url.search.slice(1),
          headers: req.headers,
          body,
        });
        if ('error' in who)
          return send(res, who.error.status, { Message: who.error.message }, who.error.type);
        send(res, 200, route(api, who.caller, method, url, body));
      } catch (error) {
        if (error instanceof SchedulerError)
          return send(res, error.status, { Message: error.message }, error.type);
        send(
          res,
          500,
          { Message: error instanceof Error ? error.message : String(error) },
          'InternalServerException',
        );
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
