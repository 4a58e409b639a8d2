/**
 * The local EventBridge Scheduler wired into the sim: callers authenticated with SigV4 (service
 * scheduler) and checked against their IAM policies, targets invoked asynchronously as the schedule's
 * role (after its trust policy lets Scheduler assume it), dead letters sent as that role; the
 * template's schedule groups exist and its own schedules are registered from their resources.
 */
import type { AccessLog } from './iam/access-log.js';
import type { IdentityStore } from './iam/identity-store.js';
import { awsErrorType, verifySigV4 } from './iam/sigv4-verifier.js';
import { LambdaError, type LambdaService } from './lambda/lambda-service.js';
import { LocalScheduler } from './scheduler/local-scheduler.js';
import type { SchedulerAuth, SchedulerTargets } from './scheduler/ports.js';
import type { LocalQueues } from './sqs/local-queues.js';
import { resourcesOfType, type Template } from './template/cloud-assembly.js';
import type { TemplateResolver } from './template/resolver.js';

export interface SimScheduler {
  endpoint: string;
  scheduler: LocalScheduler;
  start(): void;
  close(): Promise<void>;
}

export interface SchedulerWiring {
  template: Template;
  resolver: TemplateResolver;
  identities: IdentityStore;
  lambda: LambdaService;
  queues: LocalQueues;
  accessLog: AccessLog;
  port: number;
  region: string;
  accountId: string;
}

export async function startSchedulerFromTemplate(w: SchedulerWiring): Promise<SimScheduler> {
  const { identities, accessLog } = w;
  const auth: SchedulerAuth = {
    authenticate: async (request) => {
      const verified = await verifySigV4(
        { ...request, body: Buffer.from(request.body) },
        (key) => identities.byAccessKey(key)?.credentials,
        'scheduler',
      );
      if (!verified.ok) {
        return { error: { status: 403, type: awsErrorType(verified.reason), message: verified.message } };
      }
      const principal = identities.byAccessKey(verified.accessKeyId)!;
      return { caller: { principalArn: principal.arn, accountId: principal.accountId } };
    },
    isAllowed: (principalArn, action, resource, context) => {
      const allowed = identities.isAllowed(principalArn, action, resource, context);
      accessLog.add({
        at: Date.now(),
        service: action.startsWith('iam:') ? 'iam' : 'scheduler',
        principalArn,
        action,
        resource,
        allowed,
      });
      return allowed;
    },
    canAssume: (roleArn, context) =>
      identities.canAssume(roleArn, 'scheduler.amazonaws.com', {
        'aws:SourceAccount': context.sourceAccount,
        'aws:SourceArn': context.sourceArn,
      }),
  };
  const targets: SchedulerTargets = {
    invokeAsync: async ({ arn, roleArn, payload }) => {
      const session = identities.assumeRole(roleArn, 'scheduler');
      try {
        w.lambda.invokeAsync(arn, payload, { principalArn: session.arn });
      } catch (error) {
        if (error instanceof LambdaError) throw { code: error.code, message: error.message };
        throw error;
      }
    },
    sendToQueue: async (queueArn, roleArn, message) => {
      const session = identities.assumeRole(roleArn, 'scheduler');
      w.queues.send(queueArn, session.arn, message.body, message.attributes);
    },
  };
  const groups = resourcesOfType(w.template, 'AWS::Scheduler::ScheduleGroup').map(
    ([id]) => w.resolver.resource(id).ref,
  );
  const scheduler = new LocalScheduler({
    region: w.region,
    accountId: w.accountId,
    auth,
    targets,
    groups: ['default', ...groups],
    port: w.port,
  });
  const endpoint = await scheduler.listen();
  for (const [id, r] of resourcesOfType(w.template, 'AWS::Scheduler::Schedule')) {
    // CloudFormation names a schedule the template leaves unnamed.
    scheduler.putTemplateSchedule({
      Name: w.resolver.resource(id).ref,
      ...w.resolver.resolve<Record<string, unknown>>(r.Properties),
    });
  }
  return { endpoint, scheduler, start: () => scheduler.start(), close: () => scheduler.close() };
}
