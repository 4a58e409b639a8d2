/**
 * A small stand-in for the EventBridge Scheduler API on loopback (there is no Scheduler emulator), so
 * the real SchedulerClient sends its real requests. It keeps schedules by group and name, answers as
 * the service does for missing or existing ones, and can be told to fail, refuse or hold the next
 * requests. Like Scheduler's documentation, it knows time zones only by their canonical tz names.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { eventBridgeSync, type SchedulerSync } from '../../shared/schedules/scheduler-sync.js';
import { CANONICAL_TIME_ZONES } from '../../shared/schedules/time-zone-names.js';

export interface HeldRequest {
  /** Resolves when the held request has arrived (and waits). */
  arrived: Promise<void>;
  /** Lets it through: it is applied then, after whatever arrived meanwhile. */
  release(): void;
}

export interface FakeScheduler {
  endpoint: string;
  schedules: Map<string, Record<string, unknown>>;
  requests: string[];
  /** The next `count` requests answer 500 InternalServerException (worth retrying). */
  failNext(count: number): void;
  /** The next `count` create/update requests answer 400 ValidationException with `message` (not worth retrying). */
  rejectNext(count: number, message?: string): void;
  /** Holds the next request until released, to make two requests land in a chosen order. */
  holdNext(): HeldRequest;
  close(): Promise<void>;
}

const zones = new Set(CANONICAL_TIME_ZONES);

export async function startFakeScheduler(): Promise<FakeScheduler> {
  const schedules = new Map<string, Record<string, unknown>>();
  const requests: string[] = [];
  let failures = 0;
  let rejections: string[] = [];
  const holds: { arrive: () => void; gate: Promise<void> }[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const hold = holds.shift();
      if (hold) hold.arrive();
      void (hold?.gate ?? Promise.resolve()).then(() => {
        const url = new URL(req.url ?? '/', 'http://x');
        const name = decodeURIComponent(url.pathname.replace(/^\/schedules\//, ''));
        const input = body ? (JSON.parse(body) as Record<string, unknown>) : {};
        const group =
          (input.GroupName as string | undefined) ?? url.searchParams.get('groupName') ?? 'default';
        const key = `${group}/${name}`;
        requests.push(`${req.method} ${name}`);
        const answer = (status: number, payload: unknown, errorType?: string) => {
          res.writeHead(status, {
            'content-type': 'application/json',
            ...(errorType ? { 'x-amzn-errortype': errorType } : {}),
          });
          res.end(JSON.stringify(payload));
        };
        if (failures > 0) {
          failures--;
          return answer(500, { Message: 'injected failure' }, 'InternalServerException');
        }
        const writes = req.method === 'POST' || req.method === 'PUT';
        if (writes && rejections.length > 0)
          return answer(400, { Message: rejections.shift() }, 'ValidationException');
        const zone = input.ScheduleExpressionTimezone as string | undefined;
        if (writes && zone !== undefined && !zones.has(zone))
          return answer(400, { Message: `Invalid time zone: ${zone}` }, 'ValidationException');
        switch (req.method) {
          case 'POST':
            if (schedules.has(key)) return answer(409, { Message: 'exists' }, 'ConflictException');
            schedules.set(key, input);
            return answer(200, { ScheduleArn: `arn:aws:scheduler:eu-west-1:123456789012:schedule/${key}` });
          case 'PUT':
            if (!schedules.has(key))
              return answer(
                404,
                { Message: `Schedule ${name} does not exist.` },
                'ResourceNotFoundException',
              );
            schedules.set(key, input);
            return answer(200, { ScheduleArn: `arn:aws:scheduler:eu-west-1:123456789012:schedule/${key}` });
          case 'DELETE':
            if (!schedules.delete(key))
              return answer(
                404,
                { Message: `Schedule ${name} does not exist.` },
                'ResourceNotFoundException',
              );
            return answer(200, {});
          default:
            return answer(400, { Message: 'unsupported' }, 'ValidationException');
        }
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    schedules,
    requests,
    failNext: (count) => (failures = count),
    rejectNext: (count, message = 'Invalid request provided: injected refusal') =>
      (rejections = Array.from({ length: count }, () => message)),
    holdNext: () => {
      let arrive!: () => void;
      let release!: () => void;
      const arrived = new Promise<void>((r) => (arrive = r));
      const gate = new Promise<void>((r) => (release = r));
      holds.push({ arrive, gate });
      return { arrived, release };
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The production EventBridge sync, pointed at a fake Scheduler (one attempt per call: failures show at once). */
export function eventBridgeSyncFor(scheduler: FakeScheduler): SchedulerSync {
  return eventBridgeSync({
    client: new SchedulerClient({
      endpoint: scheduler.endpoint,
      region: 'eu-west-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      maxAttempts: 1,
    }),
    groupName: 'leasehold',
    targetArn: 'arn:aws:lambda:eu-west-1:123456789012:function:fire',
    roleArn: 'arn:aws:iam::123456789012:role/scheduler',
    deadLetterArn: 'arn:aws:sqs:eu-west-1:123456789012:dlq',
  });
}
