/**
 * The template's SQS queues, as places messages land: the schedules' dead-letter queue and the fire
 * function's on-failure destination. Sending is checked against the sender's IAM policy (sqs:SendMessage);
 * messages are kept in memory and appended to <dataDir>/queues/<name>.jsonl, where a user can read them.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AccessLog } from '../iam/access-log.js';
import type { IdentityStore } from '../iam/identity-store.js';

export interface QueueMessage {
  queueArn: string;
  sentAt: string;
  sender: string;
  body: string;
  attributes: Record<string, string>;
}

export class LocalQueues {
  private readonly messages: QueueMessage[] = [];

  constructor(
    private readonly queues: { arn: string; name: string }[],
    private readonly dir: string,
    private readonly identities: IdentityStore,
    private readonly log: AccessLog,
  ) {
    mkdirSync(dir, { recursive: true });
  }

  send(queueArn: string, senderArn: string, body: string, attributes: Record<string, string> = {}): void {
    const queue = this.queues.find((q) => q.arn === queueArn);
    const allowed = queue !== undefined && this.identities.isAllowed(senderArn, 'sqs:SendMessage', queueArn);
    this.log.add({
      at: Date.now(),
      service: 'sqs',
      principalArn: senderArn,
      action: 'sqs:SendMessage',
      resource: queueArn,
      allowed,
    });
    if (!queue) throw new Error(`AWS.SimpleQueueService.NonExistentQueue: ${queueArn}`);
    if (!allowed)
      throw new Error(
        `AccessDenied: ${senderArn} is not authorized to perform: sqs:SendMessage on resource: ${queueArn}`,
      );
    const message = { queueArn, sentAt: new Date().toISOString(), sender: senderArn, body, attributes };
    this.messages.push(message);
    appendFileSync(this.fileOf(queue.name), `${JSON.stringify(message)}\n`);
  }

  fileOf(name: string): string {
    return join(this.dir, `${name}.jsonl`);
  }

  list(): { arn: string; name: string; file: string; messages: QueueMessage[] }[] {
    return this.queues.map((q) => ({
      ...q,
      file: this.fileOf(q.name),
      messages: this.messages.filter((m) => m.queueArn === q.arn),
    }));
  }
}
