/**
 * A small stand-in for the EventBridge Scheduler API on loopback (there is no Scheduler emulator), so
 * the real SchedulerClient sends its real requests. It keeps schedules by group and name, answers as
 * the service does for missing or existing ones, and can be told to fail the next requests.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeScheduler {
  endpoint: string;
  schedules: Map<string, Record<string, unknown>>;
  requests: string[];
  failNext(count: number): void;
  close(): Promise<void>;
}

export async function startFakeScheduler(): Promise<FakeScheduler> {
  const schedules = new Map<string, Record<string, unknown>>();
  const requests: string[] = [];
  let failures = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const name = decodeURIComponent(url.pathname.replace(/^\/schedules\//, ''));
      const input = body ? (JSON.parse(body) as Record<string, unknown>) : {};
      const group = (input.GroupName as string | undefined) ?? url.searchParams.get('groupName') ?? 'default';
      const key = `${group}/${name}`;
      requests.push(`${req.method} ${name}`);
      const answer = (status: number, payload: unknown, errorType?: string) => {
        res.writeHead(status, { 'content-type': 'application/json', ...(errorType ? { 'x-amzn-errortype': errorType } : {}) });
        res.end(JSON.stringify(payload));
      };
      if (failures > 0) {
        failures--;
        return answer(500, { Message: 'injected failure' }, 'InternalServerException');
      }
      switch (req.method) {
        case 'POST':
          if (schedules.has(key)) return answer(409, { Message: 'exists' }, 'ConflictException');
          schedules.set(key, input);
          return answer(200, { ScheduleArn: `arn:aws:scheduler:eu-west-1:123456789012:schedule/${key}` });
        case 'PUT':
          if (!schedules.has(key)) return answer(404, { Message: `Schedule ${name} does not exist.` }, 'ResourceNotFoundException');
          schedules.set(key, input);
          return answer(200, { ScheduleArn: `arn:aws:scheduler:eu-west-1:123456789012:schedule/${key}` });
        case 'DELETE':
          if (!schedules.delete(key)) return answer(404, { Message: `Schedule ${name} does not exist.` }, 'ResourceNotFoundException');
          return answer(200, {});
        default:
          return answer(400, { Message: 'unsupported' }, 'ValidationException');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    schedules,
    requests,
    failNext: (count) => (failures = count),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
