/**
 * Keeps EventBridge Scheduler in step with the definitions in the table. Upsert is idempotent (update,
 * or create when missing), so a retried PUT repairs whatever a failed one left.
 */
import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  SchedulerClient,
  UpdateScheduleCommand,
  type CreateScheduleCommandInput,
} from '@aws-sdk/client-scheduler';
import { createHash } from 'node:crypto';
import { isOneTime } from './schedule-expression.js';
import type { ScheduleDefinition } from './schedule-model.js';

/**
 * What each schedule's target sends the fire function. `owner` and `name` find the definition;
 * `generation` is the creation of that name the schedule was made for: a delivery that arrives after
 * the name was deleted and created again (EventBridge retries for up to an hour) fires nothing.
 */
export interface FireInput {
  scheduleName: string;
  owner: string;
  generation: string;
  scheduledTime: string;
}

/**
 * The EventBridge schedule's name: unique per owner and name (Scheduler's names are one namespace per
 * group, 1-64 of [0-9a-zA-Z-_.]), readable by the name's start, and telling nobody else's names apart
 * from their own: `<name, first 31 characters>-<32 hex of sha256(owner, name)>`.
 */
export function eventBridgeName(def: Pick<ScheduleDefinition, 'owner' | 'name'>): string {
  const digest = createHash('sha256').update(def.owner).update('\u0000').update(def.name).digest('hex');
  return `${def.name.slice(0, 31)}-${digest.slice(0, 32)}`;
}

export interface SchedulerSync {
  /** 'LOCAL': no EventBridge; the local stack evaluates the expressions itself. */
  readonly mode: 'eventbridge' | 'local';
  upsert(def: ScheduleDefinition): Promise<void>;
  remove(def: Pick<ScheduleDefinition, 'owner' | 'name'>): Promise<void>;
}

export const localSync: SchedulerSync = {
  mode: 'local',
  upsert: async () => undefined,
  remove: async () => undefined,
};

export interface EventBridgeSyncOptions {
  client: SchedulerClient;
  groupName: string;
  /** The fire function the schedules invoke. */
  targetArn: string;
  /** The role EventBridge Scheduler assumes to invoke it (the API passes it: iam:PassRole). */
  roleArn: string;
  deadLetterArn?: string;
}

export function eventBridgeSync(options: EventBridgeSyncOptions): SchedulerSync {
  const input = (def: ScheduleDefinition): CreateScheduleCommandInput => ({
    Name: eventBridgeName(def),
    GroupName: options.groupName,
    ScheduleExpression: def.expression,
    ScheduleExpressionTimezone: def.timezone,
    FlexibleTimeWindow: { Mode: 'OFF' },
    State: def.enabled ? 'ENABLED' : 'DISABLED',
    // A one-time schedule deletes itself after its one invocation instead of staying in the group for ever.
    ActionAfterCompletion: isOneTime(def.expression) ? 'DELETE' : 'NONE',
    Description: `Leasehold schedule ${def.name} of ${def.owner} (version ${def.version})`.slice(0, 512),
    Target: {
      Arn: options.targetArn,
      RoleArn: options.roleArn,
      // The scheduled time (not the delivery time) makes each tick's idempotency key.
      Input: JSON.stringify({
        scheduleName: def.name,
        owner: def.owner,
        generation: def.generation,
        scheduledTime: '<aws.scheduler.scheduled-time>',
      } satisfies Partial<FireInput>),
      RetryPolicy: { MaximumRetryAttempts: 5, MaximumEventAgeInSeconds: 3600 },
      ...(options.deadLetterArn ? { DeadLetterConfig: { Arn: options.deadLetterArn } } : {}),
    },
  });
  return {
    mode: 'eventbridge',
    upsert: async (def) => {
      try {
        await options.client.send(new UpdateScheduleCommand(input(def)));
      } catch (error) {
        if (!(error instanceof ResourceNotFoundException)) throw error;
        try {
          await options.client.send(new CreateScheduleCommand(input(def)));
        } catch (createError) {
          // Created meanwhile by a concurrent PUT: bring it to this version.
          if (!(createError instanceof ConflictException)) throw createError;
          await options.client.send(new UpdateScheduleCommand(input(def)));
        }
      }
    },
    remove: async (def) => {
      try {
        await options.client.send(
          new DeleteScheduleCommand({ Name: eventBridgeName(def), GroupName: options.groupName }),
        );
      } catch (error) {
        if (!(error instanceof ResourceNotFoundException)) throw error;
      }
    },
  };
}

/** Client errors that a later try may not meet: throttling, and a concurrent change to the same schedule. */
const RETRYABLE_CLIENT_ERRORS = new Set([
  'ThrottlingException',
  'ConflictException',
  'TooManyRequestsException',
]);

/**
 * Scheduler's reason, when it refused a call for a reason sending it again cannot fix: a client error
 * (4xx) other than throttling or a conflict, e.g. its ValidationException for a time zone or cron it does
 * not take, ServiceQuotaExceededException, AccessDeniedException. Undefined for anything worth retrying.
 */
export function schedulerRejection(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const e = error as Error & { $fault?: string; $retryable?: unknown };
  if (e.$fault !== 'client' || e.$retryable || RETRYABLE_CLIENT_ERRORS.has(e.name)) return undefined;
  return `${e.name}: ${e.message}`;
}
