/**
 * What the local EventBridge Scheduler needs from the rest of the sim (the lead wires these): request
 * authentication and IAM decisions, and the two calls Scheduler makes as the schedule's execution role.
 */
export interface SchedulerCaller {
  principalArn: string;
  accountId: string;
}

export interface SchedulerAuth {
  /** Verifies the request's SigV4 signature (service "scheduler"); resolves the caller or an error answer to send as-is. */
  authenticate(request: {
    method: string;
    path: string;
    query: string;
    headers: Record<string, string | string[] | undefined>;
    body: string;
  }): Promise<{ caller: SchedulerCaller } | { error: { status: number; type: string; message: string } }>;
  /** The IAM decision for one action on one resource (conditions as key/value context). */
  isAllowed(
    principalArn: string,
    action: string,
    resourceArn: string,
    context?: Record<string, string>,
  ): boolean;
  /** Whether Scheduler may assume this role for a schedule of this group (trust policy + conditions). */
  canAssume(roleArn: string, context: { sourceAccount: string; sourceArn: string }): boolean;
}

export interface SchedulerTargets {
  /** Asynchronous Lambda Invoke as the assumed role; rejects with { code, message } when the invocation is refused (then Scheduler retries / dead-letters). */
  invokeAsync(target: { arn: string; roleArn: string; payload: string }): Promise<void>;
  /** SQS SendMessage to a dead-letter queue as the assumed role. */
  sendToQueue(
    queueArn: string,
    roleArn: string,
    message: { body: string; attributes: Record<string, string> },
  ): Promise<void>;
}
