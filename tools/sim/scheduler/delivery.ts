/**
 * One execution of a schedule: what Scheduler does at a tick. It assumes the execution role (the role's
 * trust policy must let scheduler.amazonaws.com in, with aws:SourceAccount / aws:SourceArn = the
 * schedule group), invokes the target asynchronously with the context attributes substituted, retries a
 * refused delivery per RetryPolicy, then sends the event to the dead-letter queue.
 *
 * Scheduler invokes Lambda asynchronously (Lambda guide, "with-eventbridge-scheduler"), so a delivery
 * fails only when the Invoke call is refused (throttled, denied, function missing); a function error is
 * Lambda's business, never retried here. Dead-letter message: the target input as body, attributes
 * ERROR_CODE, ERROR_MESSAGE, EXECUTION_ID, EXHAUSTED_RETRY_CONDITION (MaximumRetryAttempts |
 * MaximumEventAgeInSeconds), IS_PAYLOAD_TRUNCATED, RETRY_ATTEMPTS, SCHEDULED_TIME, SCHEDULE_ARN,
 * TARGET_ARN (Scheduler guide, "Configuring a dead-letter queue"). Backoff between retries is
 * exponential with jitter; Scheduler does not document its exact timing.
 */
import type { SchedulerAuth, SchedulerTargets } from './ports.js';
import { isoSeconds, type ScheduleRequest } from './schedule-rules.js';

export interface FireRecord {
  name: string;
  group: string;
  scheduleArn: string;
  /** `<aws.scheduler.scheduled-time>`: the tick, to the second, e.g. 2026-12-01T09:00:00Z. */
  scheduledTime: string;
  executionId: string;
  /** 1 for the first delivery, 2 for the first retry, ... */
  attempt: number;
  /** When this happened (ms, on the scheduler's clock). */
  at: number;
  /** delivered / failed: one delivery attempt; dead-lettered / dropped: the retries ran out. */
  outcome: 'delivered' | 'failed' | 'dead-lettered' | 'dropped';
  error?: { code: string; message: string };
  /** Why the retries ended (dead-lettered / dropped). */
  exhaustedRetryCondition?: 'MaximumRetryAttempts' | 'MaximumEventAgeInSeconds';
}

export interface Execution {
  name: string;
  group: string;
  scheduleArn: string;
  groupArn: string;
  target: ScheduleRequest['Target'];
  tick: number;
  executionId: string;
}

export interface DeliveryContext {
  accountId: string;
  auth: SchedulerAuth;
  targets: SchedulerTargets;
  now(): number;
  random(): number;
  /** Resolves true after `ms`, or false when the scheduler closed meanwhile. */
  sleep(ms: number): Promise<boolean>;
  log(record: FireRecord): void;
}

/** Replaces Scheduler's context attributes in the target input. */
export function substitute(
  input: string,
  values: { scheduledTime: string; executionId: string; attempt: number; scheduleArn: string },
): string {
  return input
    .replaceAll('<aws.scheduler.scheduled-time>', values.scheduledTime)
    .replaceAll('<aws.scheduler.execution-id>', values.executionId)
    .replaceAll('<aws.scheduler.attempt-number>', String(values.attempt))
    .replaceAll('<aws.scheduler.schedule-arn>', values.scheduleArn);
}

export function backoffMs(attempt: number, random: () => number): number {
  return Math.min(1000 * 2 ** (attempt - 1), 300_000) * (0.5 + random() / 2);
}

type Failure = { code: string; message: string };

async function attemptOnce(
  ctx: DeliveryContext,
  e: Execution,
  payload: string,
): Promise<Failure | undefined> {
  if (!ctx.auth.canAssume(e.target.RoleArn, { sourceAccount: ctx.accountId, sourceArn: e.groupArn })) {
    return {
      code: 'AccessDeniedException',
      message: `EventBridge Scheduler could not assume ${e.target.RoleArn}: its trust policy does not allow scheduler.amazonaws.com for ${e.groupArn}`,
    };
  }
  try {
    await ctx.targets.invokeAsync({ arn: e.target.Arn, roleArn: e.target.RoleArn, payload });
    return undefined;
  } catch (error) {
    const f = (error ?? {}) as Partial<Failure>;
    return {
      code: typeof f.code === 'string' ? f.code : 'InternalError',
      message: typeof f.message === 'string' ? f.message : String(error),
    };
  }
}

export async function deliver(ctx: DeliveryContext, e: Execution): Promise<FireRecord['outcome']> {
  const scheduledTime = isoSeconds(e.tick);
  const base = {
    name: e.name,
    group: e.group,
    scheduleArn: e.scheduleArn,
    scheduledTime,
    executionId: e.executionId,
  };
  const { MaximumRetryAttempts: maxRetries, MaximumEventAgeInSeconds: maxAge } = e.target.RetryPolicy;
  const firstAt = ctx.now();
  let attempt = 1;
  for (;;) {
    // No Input: Scheduler "delivers a default notification"; an empty JSON object stands in for it.
    const payload = substitute(e.target.Input ?? '{}', {
      scheduledTime,
      executionId: e.executionId,
      attempt,
      scheduleArn: e.scheduleArn,
    });
    const failure = await attemptOnce(ctx, e, payload);
    ctx.log({
      ...base,
      attempt,
      at: ctx.now(),
      outcome: failure ? 'failed' : 'delivered',
      ...(failure ? { error: failure } : {}),
    });
    if (!failure) return 'delivered';
    const delay = backoffMs(attempt, ctx.random);
    const condition =
      attempt - 1 >= maxRetries
        ? 'MaximumRetryAttempts'
        : ctx.now() + delay - firstAt > maxAge * 1000
          ? 'MaximumEventAgeInSeconds'
          : undefined;
    if (condition) return deadLetter(ctx, e, { ...base, attempt, payload, failure, condition });
    if (!(await ctx.sleep(delay))) return 'dropped';
    attempt += 1;
  }
}

async function deadLetter(
  ctx: DeliveryContext,
  e: Execution,
  last: Omit<FireRecord, 'at' | 'outcome'> & {
    payload: string;
    failure: Failure;
    condition: NonNullable<FireRecord['exhaustedRetryCondition']>;
  },
): Promise<FireRecord['outcome']> {
  const { payload, failure, condition, ...record } = last;
  const queue = e.target.DeadLetterConfig?.Arn;
  let outcome: FireRecord['outcome'] = 'dropped';
  let error = failure;
  if (queue) {
    const attributes = {
      ERROR_CODE: failure.code,
      ERROR_MESSAGE: failure.message,
      EXECUTION_ID: e.executionId,
      EXHAUSTED_RETRY_CONDITION: condition,
      IS_PAYLOAD_TRUNCATED: 'false',
      RETRY_ATTEMPTS: String(last.attempt - 1),
      SCHEDULED_TIME: last.scheduledTime,
      SCHEDULE_ARN: e.scheduleArn,
      TARGET_ARN: e.target.Arn,
    };
    try {
      if (!ctx.auth.canAssume(e.target.RoleArn, { sourceAccount: ctx.accountId, sourceArn: e.groupArn }))
        throw { code: 'AccessDeniedException', message: `could not assume ${e.target.RoleArn}` };
      await ctx.targets.sendToQueue(queue, e.target.RoleArn, { body: payload, attributes });
      outcome = 'dead-lettered';
    } catch (sendError) {
      const f = (sendError ?? {}) as Partial<Failure>;
      error = {
        code: f.code ?? 'DeadLetterFailed',
        message: `dead-letter queue ${queue}: ${f.message ?? String(sendError)}`,
      };
    }
  }
  ctx.log({ ...record, at: ctx.now(), outcome, error, exhaustedRetryCondition: condition });
  return outcome;
}
