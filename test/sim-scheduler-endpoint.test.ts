import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  GetScheduleCommand,
  ListSchedulesCommand,
  ResourceNotFoundException,
  SchedulerClient,
  UpdateScheduleCommand,
  ValidationException,
  type CreateScheduleCommandInput,
} from '@aws-sdk/client-scheduler';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalScheduler, type SchedulerTimers } from '../tools/sim/scheduler/local-scheduler.js';
import type { SchedulerAuth, SchedulerTargets } from '../tools/sim/scheduler/ports.js';

const ACCOUNT = '123456789012';
const ROLE = `arn:aws:iam::${ACCOUNT}:role/scheduler-invoke`;
const FUNCTION = `arn:aws:lambda:us-east-1:${ACCOUNT}:function:fire`;
const DLQ = `arn:aws:sqs:us-east-1:${ACCOUNT}:fire-dlq`;
const START = Date.parse('2026-12-01T08:59:43.512Z');

/** Manual clock and timers: advance() runs due callbacks in time order and lets their promises settle. */
class FakeTime implements SchedulerTimers {
  t = START;
  private seq = 0;
  private queue = new Map<number, { at: number; fn: () => void }>();
  now = () => this.t;
  setTimeout(fn: () => void, ms: number): unknown {
    this.queue.set(++this.seq, { at: this.t + Math.max(0, ms), fn });
    return this.seq;
  }
  clearTimeout(handle: unknown): void {
    this.queue.delete(handle as number);
  }
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await new Promise((r) => setImmediate(r));
      const due = [...this.queue.entries()]
        .filter(([, v]) => v.at <= end)
        .sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (!due) break;
      this.queue.delete(due[0]);
      this.t = due[1].at;
      due[1].fn();
    }
    this.t = end;
  }
}

interface Setup {
  deny?: string[];
  assumable?: boolean;
  failInvoke?: boolean;
  random?: () => number;
}

const open: LocalScheduler[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function setup(options: Setup = {}) {
  const time = new FakeTime();
  const invoked: Array<{ arn: string; roleArn: string; payload: string }> = [];
  const deadLetters: Array<{ queueArn: string; body: string; attributes: Record<string, string> }> = [];
  const auth: SchedulerAuth = {
    authenticate: async () => ({
      caller: { principalArn: `arn:aws:iam::${ACCOUNT}:role/api`, accountId: ACCOUNT },
    }),
    isAllowed: (_principal, action) => !(options.deny ?? []).includes(action),
    canAssume: (roleArn, context) =>
      (options.assumable ?? true) &&
      roleArn === ROLE &&
      context.sourceAccount === ACCOUNT &&
      context.sourceArn === `arn:aws:scheduler:us-east-1:${ACCOUNT}:schedule-group/leasehold`,
  };
  const targets: SchedulerTargets = {
    invokeAsync: async (target) => {
      invoked.push(target);
      if (options.failInvoke) throw { code: 'TooManyRequestsException', message: 'Rate Exceeded.' };
    },
    sendToQueue: async (queueArn, _role, message) => {
      deadLetters.push({ queueArn, ...message });
    },
  };
  const scheduler = new LocalScheduler({
    region: 'us-east-1',
    accountId: ACCOUNT,
    now: time.now,
    random: options.random ?? (() => 0),
    timers: time,
    auth,
    targets,
    groups: ['default', 'leasehold'],
  });
  open.push(scheduler);
  const endpoint = await scheduler.listen();
  const client = new SchedulerClient({
    region: 'us-east-1',
    endpoint,
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
    maxAttempts: 1,
  });
  return { time, scheduler, client, invoked, deadLetters };
}

const input = (over: Partial<CreateScheduleCommandInput> = {}): CreateScheduleCommandInput => ({
  Name: 'reminder',
  GroupName: 'leasehold',
  ScheduleExpression: 'rate(1 minute)',
  FlexibleTimeWindow: { Mode: 'OFF' },
  ...over,
  Target: {
    Arn: FUNCTION,
    RoleArn: ROLE,
    Input:
      '{"scheduledTime":"<aws.scheduler.scheduled-time>","attempt":"<aws.scheduler.attempt-number>","arn":"<aws.scheduler.schedule-arn>"}',
    ...over.Target,
  },
});

async function refusal(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof Error)) throw new Error('expected the call to be refused');
  return error;
}

describe('API through the real SchedulerClient', () => {
  it('creates, gets, updates, lists and deletes', async () => {
    const { client } = await setup();
    const created = await client.send(
      new CreateScheduleCommand(input({ ScheduleExpressionTimezone: 'Europe/Berlin' })),
    );
    expect(created.ScheduleArn).toBe(`arn:aws:scheduler:us-east-1:${ACCOUNT}:schedule/leasehold/reminder`);
    const got = await client.send(new GetScheduleCommand({ Name: 'reminder', GroupName: 'leasehold' }));
    expect(got).toMatchObject({
      Name: 'reminder',
      GroupName: 'leasehold',
      State: 'ENABLED',
      ScheduleExpressionTimezone: 'Europe/Berlin',
      ActionAfterCompletion: 'NONE',
    });
    expect(got.Target?.RetryPolicy).toEqual({ MaximumEventAgeInSeconds: 86400, MaximumRetryAttempts: 185 });
    expect(got.CreationDate).toEqual(new Date(START));
    await client.send(
      new UpdateScheduleCommand(input({ ScheduleExpression: 'cron(0 9 ? * MON-FRI *)', State: 'DISABLED' })),
    );
    expect(
      await client.send(new GetScheduleCommand({ Name: 'reminder', GroupName: 'leasehold' })),
    ).toMatchObject({ ScheduleExpression: 'cron(0 9 ? * MON-FRI *)', State: 'DISABLED' });
    expect(
      (await client.send(new ListSchedulesCommand({ GroupName: 'leasehold' }))).Schedules?.map((s) => s.Name),
    ).toEqual(['reminder']);
    await client.send(new DeleteScheduleCommand({ Name: 'reminder', GroupName: 'leasehold' }));
    expect(
      await refusal(client.send(new GetScheduleCommand({ Name: 'reminder', GroupName: 'leasehold' }))),
    ).toBeInstanceOf(ResourceNotFoundException);
  });

  it('answers ValidationException saying what is wrong', async () => {
    const { client } = await setup();
    const zone = await refusal(
      client.send(new CreateScheduleCommand(input({ ScheduleExpressionTimezone: 'US/Pacific' }))),
    );
    expect(zone).toBeInstanceOf(ValidationException);
    expect(zone.message).toContain('US/Pacific');
    const cron = await refusal(
      client.send(new CreateScheduleCommand(input({ ScheduleExpression: 'cron(0 9 * * 1-5)' }))),
    );
    expect(cron).toBeInstanceOf(ValidationException);
    expect(cron.message).toContain('six fields');
    const name = await refusal(client.send(new CreateScheduleCommand(input({ Name: 'two words' }))));
    expect(name.message).toContain("Value 'two words' at 'name' failed to satisfy constraint");
  });

  it('answers ResourceNotFoundException for a missing group, ConflictException for a second create, AccessDeniedException without PassRole', async () => {
    const { client } = await setup();
    expect(
      await refusal(client.send(new CreateScheduleCommand(input({ GroupName: 'nope' })))),
    ).toBeInstanceOf(ResourceNotFoundException);
    expect(await refusal(client.send(new UpdateScheduleCommand(input())))).toBeInstanceOf(
      ResourceNotFoundException,
    );
    await client.send(new CreateScheduleCommand(input()));
    expect(await refusal(client.send(new CreateScheduleCommand(input())))).toBeInstanceOf(ConflictException);
    const denied = await setup({ deny: ['iam:PassRole'] });
    const error = await refusal(denied.client.send(new CreateScheduleCommand(input())));
    // Not in Scheduler's model, so the SDK has no class for it: a SchedulerServiceException by name.
    expect(error).toMatchObject({ name: 'AccessDeniedException', $metadata: { httpStatusCode: 403 } });
    expect(error.message).toContain(`iam:PassRole on resource: ${ROLE}`);
  });
});

describe('firing', () => {
  it('fires rate(1 minute) once a minute from the create second, with the scheduled time substituted', async () => {
    const { client, scheduler, time, invoked } = await setup();
    scheduler.start();
    await client.send(new CreateScheduleCommand(input()));
    await time.advance(150_000);
    expect(invoked.map((i) => JSON.parse(i.payload).scheduledTime)).toEqual([
      '2026-12-01T08:59:43Z',
      '2026-12-01T09:00:43Z',
      '2026-12-01T09:01:43Z',
    ]);
    expect(JSON.parse(invoked[0]!.payload)).toMatchObject({
      attempt: '1',
      arn: `arn:aws:scheduler:us-east-1:${ACCOUNT}:schedule/leasehold/reminder`,
    });
    expect(scheduler.fires().map((f) => f.outcome)).toEqual(['delivered', 'delivered', 'delivered']);
  });

  it('restarts a rate rhythm at UpdateSchedule, and delays FLEXIBLE fires within the window without moving the scheduled time', async () => {
    const { client, scheduler, time, invoked } = await setup({ random: () => 0.5 });
    scheduler.start();
    await client.send(new CreateScheduleCommand(input({ ScheduleExpression: 'rate(5 minutes)' })));
    await time.advance(100_000);
    await client.send(
      new UpdateScheduleCommand(
        input({
          ScheduleExpression: 'rate(5 minutes)',
          FlexibleTimeWindow: { Mode: 'FLEXIBLE', MaximumWindowInMinutes: 2 },
        }),
      ),
    );
    await time.advance(400_000);
    expect(invoked.map((i) => JSON.parse(i.payload).scheduledTime)).toEqual([
      '2026-12-01T08:59:43Z',
      '2026-12-01T09:01:23Z',
      '2026-12-01T09:06:23Z',
    ]);
    // random 0.5 of a 2-minute window: each flexible fire lands 60 s after its tick.
    expect(scheduler.fires().map((f) => new Date(f.at).toISOString())).toEqual([
      '2026-12-01T08:59:43.512Z',
      '2026-12-01T09:02:23.000Z',
      '2026-12-01T09:07:23.000Z',
    ]);
  });

  it('fires a cron schedule at its ticks in its zone', async () => {
    const { client, scheduler, time, invoked } = await setup();
    scheduler.start();
    await client.send(
      new CreateScheduleCommand(
        input({ ScheduleExpression: 'cron(0 10 * * ? *)', ScheduleExpressionTimezone: 'Europe/Berlin' }),
      ),
    );
    await time.advance(2 * 86_400_000);
    expect(invoked.map((i) => JSON.parse(i.payload).scheduledTime)).toEqual([
      '2026-12-01T09:00:00Z',
      '2026-12-02T09:00:00Z',
    ]);
  });

  it('fires at() once, then deletes it with ActionAfterCompletion DELETE and keeps it with NONE', async () => {
    const { client, scheduler, time, invoked } = await setup();
    scheduler.start();
    await client.send(
      new CreateScheduleCommand(
        input({
          Name: 'once-delete',
          ScheduleExpression: 'at(2026-12-01T09:05:00)',
          ActionAfterCompletion: 'DELETE',
        }),
      ),
    );
    await client.send(
      new CreateScheduleCommand(input({ Name: 'once-keep', ScheduleExpression: 'at(2026-12-01T09:05:00)' })),
    );
    await time.advance(3_600_000);
    expect(invoked).toHaveLength(2);
    expect(scheduler.schedules().map((s) => s.name)).toEqual(['once-keep']);
    expect(
      await refusal(client.send(new GetScheduleCommand({ Name: 'once-delete', GroupName: 'leasehold' }))),
    ).toBeInstanceOf(ResourceNotFoundException);
  });

  it('retries a refused delivery per RetryPolicy, then dead-letters it with Scheduler attributes', async () => {
    const { client, scheduler, time, invoked, deadLetters } = await setup({ failInvoke: true });
    scheduler.start();
    const target = {
      Arn: FUNCTION,
      RoleArn: ROLE,
      RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 60 },
      DeadLetterConfig: { Arn: DLQ },
    };
    await client.send(
      new CreateScheduleCommand(input({ ScheduleExpression: 'at(2026-12-01T09:00:00)', Target: target })),
    );
    await time.advance(120_000);
    expect(invoked.map((i) => JSON.parse(i.payload).attempt)).toEqual(['1', '2', '3']);
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]).toMatchObject({
      queueArn: DLQ,
      attributes: {
        ERROR_CODE: 'TooManyRequestsException',
        ERROR_MESSAGE: 'Rate Exceeded.',
        EXHAUSTED_RETRY_CONDITION: 'MaximumRetryAttempts',
        RETRY_ATTEMPTS: '2',
        SCHEDULED_TIME: '2026-12-01T09:00:00Z',
        SCHEDULE_ARN: `arn:aws:scheduler:us-east-1:${ACCOUNT}:schedule/leasehold/reminder`,
        TARGET_ARN: FUNCTION,
        IS_PAYLOAD_TRUNCATED: 'false',
      },
    });
    expect(JSON.parse(deadLetters[0]!.body).attempt).toBe('3');
    expect(scheduler.fires().map((f) => [f.attempt, f.outcome])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'failed'],
      [3, 'dead-lettered'],
    ]);
  });

  it('does not invoke when Scheduler cannot assume the role, and never fires DISABLED schedules', async () => {
    const { client, scheduler, time, invoked } = await setup({ assumable: false });
    scheduler.start();
    await client.send(
      new CreateScheduleCommand(
        input({ Target: { Arn: FUNCTION, RoleArn: ROLE, RetryPolicy: { MaximumRetryAttempts: 0 } } }),
      ),
    );
    await client.send(new CreateScheduleCommand(input({ Name: 'off', State: 'DISABLED' })));
    await time.advance(30_000);
    expect(invoked).toHaveLength(0);
    expect(scheduler.fires()).toMatchObject([
      { name: 'reminder', outcome: 'failed', error: { code: 'AccessDeniedException' } },
      { name: 'reminder', outcome: 'dropped', exhaustedRetryCondition: 'MaximumRetryAttempts' },
    ]);
  });

  it('registers and fires the stack schedules from the template without caller checks', async () => {
    const { scheduler, time, invoked } = await setup({ deny: ['scheduler:CreateSchedule', 'iam:PassRole'] });
    scheduler.putTemplateSchedule({
      Name: 'worker',
      GroupName: 'leasehold',
      ScheduleExpression: 'rate(1 minute)',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: {
        Arn: FUNCTION,
        RoleArn: ROLE,
        Input: '{"source":"leasehold.worker","scheduledTime":"<aws.scheduler.scheduled-time>"}',
        RetryPolicy: { MaximumEventAgeInSeconds: 60, MaximumRetryAttempts: 2 },
        DeadLetterConfig: { Arn: DLQ },
      },
    });
    expect(() =>
      scheduler.putTemplateSchedule({ Name: 'bad', ScheduleExpression: 'rate(1 minute)' }),
    ).toThrow(/validation error/);
    scheduler.start();
    await time.advance(60_000);
    expect(invoked.map((i) => JSON.parse(i.payload))).toEqual([
      { source: 'leasehold.worker', scheduledTime: '2026-12-01T08:59:43Z' },
      { source: 'leasehold.worker', scheduledTime: '2026-12-01T09:00:43Z' },
    ]);
  });
});
