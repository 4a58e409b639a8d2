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
import { isOneTime } from './schedule-expression.js';
import type { ScheduleDefinition } from './schedule-model.js';

export interface SchedulerSync {
  /** 'LOCAL': no EventBridge; the local stack evaluates the expressions itself. */
  readonly mode: 'eventbridge' | 'local';
  upsert(def: ScheduleDefinition): Promise<void>;
  remove(name: string): Promise<void>;
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
    Name: def.name,
    GroupName: options.groupName,
    ScheduleExpression: def.expression,
    ScheduleExpressionTimezone: def.timezone,
    FlexibleTimeWindow: { Mode: 'OFF' },
    State: def.enabled ? 'ENABLED' : 'DISABLED',
    // A one-time schedule deletes itself after its one invocation instead of staying in the group for ever.
    ActionAfterCompletion: isOneTime(def.expression) ? 'DELETE' : 'NONE',
    Description: `Leasehold schedule ${def.name} (version ${def.version})`,
    Target: {
      Arn: options.targetArn,
      RoleArn: options.roleArn,
      // The scheduled time (not the delivery time) makes each tick's idempotency key.
      Input: JSON.stringify({ scheduleName: def.name, scheduledTime: '<aws.scheduler.scheduled-time>' }),
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
    remove: async (name) => {
      try {
        await options.client.send(new DeleteScheduleCommand({ Name: name, GroupName: options.groupName }));
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
