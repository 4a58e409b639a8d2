/**
 * Schedule definitions and fire records in the task table. Definitions share one partition
 * (`SCHEDULES`, sorted by name) so every node lists them with one query; each schedule's fires have a
 * partition of their own, sorted by scheduled time.
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { StoreContext } from '../store/context.js';
import { isConditionalCheckFailed } from '../store/dynamo.js';
import { Expression } from '../store/expression.js';
import type { ConditionPart } from '../store/expression.js';
import { KEY } from '../table-layout.js';
import type { FireRecord, ScheduleDefinition, SyncState } from './schedule-model.js';

const DEFINITIONS = 'SCHEDULES';
const definitionKey = (name: string) => ({ [KEY.partition]: DEFINITIONS, [KEY.sort]: name });
const firesPartition = (name: string) => `FIRES#${name}`;

/** Replacing a definition: it is new, or the caller owns it (a name belongs to whoever created it). */
const newOrOwnedBy =
  (owner: string): ConditionPart =>
  (e) =>
    `attribute_not_exists(${e.name(KEY.partition)}) OR ${e.name('owner')} = ${e.value(owner)}`;
/** Recording the sync outcome: only for the version it was about; a newer PUT meanwhile wins. */
const atVersion =
  (version: number): ConditionPart =>
  (e) =>
    `${e.name('version')} = ${e.value(version)}`;
/** Recording a fire: once per tick, whichever node or delivery gets there first. */
const fireIsNew: ConditionPart = (e) => `attribute_not_exists(${e.name(KEY.partition)})`;

export class ScheduleStore {
  constructor(private readonly ctx: StoreContext) {}

  async get(name: string): Promise<ScheduleDefinition | undefined> {
    const out = await this.ctx.doc.send(new GetCommand({ TableName: this.ctx.tableName, Key: definitionKey(name), ConsistentRead: true }));
    return out.Item ? fromItem(out.Item) : undefined;
  }

  async list(): Promise<ScheduleDefinition[]> {
    const defs: ScheduleDefinition[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await this.ctx.doc.send(
        new QueryCommand({
          TableName: this.ctx.tableName,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': KEY.partition },
          ExpressionAttributeValues: { ':pk': DEFINITIONS },
          ConsistentRead: true,
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      defs.push(...(out.Items ?? []).map(fromItem));
      startKey = out.LastEvaluatedKey;
    } while (startKey);
    return defs;
  }

  /** Writes the definition (a new version); false when the name belongs to another owner. */
  async put(def: ScheduleDefinition): Promise<boolean> {
    const condition = new Expression().require(newOrOwnedBy(def.owner)).params();
    try {
      await this.ctx.doc.send(new PutCommand({ TableName: this.ctx.tableName, Item: { ...definitionKey(def.name), ...def, task: JSON.stringify(def.task) }, ...condition }));
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  async setSyncState(name: string, version: number, state: SyncState, error?: string): Promise<void> {
    const e = new Expression().require(atVersion(version)).assign({ syncState: state, syncError: error });
    try {
      await this.ctx.doc.send(new UpdateCommand({ TableName: this.ctx.tableName, Key: definitionKey(name), ...e.params() }));
    } catch (err) {
      if (!isConditionalCheckFailed(err)) throw err;
    }
  }

  /** Stops fires of this version at once (a delete in progress): the fire handler checks `enabled`. */
  async disable(name: string, version: number): Promise<void> {
    const e = new Expression().require(atVersion(version)).set('enabled', false).set('syncState', 'PENDING');
    await this.ctx.doc.send(new UpdateCommand({ TableName: this.ctx.tableName, Key: definitionKey(name), ...e.params() }));
  }

  async delete(name: string, owner: string): Promise<void> {
    const condition = new Expression().require(newOrOwnedBy(owner)).params();
    await this.ctx.doc.send(new DeleteCommand({ TableName: this.ctx.tableName, Key: definitionKey(name), ...condition }));
  }

  /** Records a fire; false when this tick was recorded already. */
  async recordFire(name: string, fire: FireRecord): Promise<boolean> {
    const condition = new Expression().require(fireIsNew).params();
    try {
      await this.ctx.doc.send(
        new PutCommand({ TableName: this.ctx.tableName, Item: { [KEY.partition]: firesPartition(name), [KEY.sort]: new Date(fire.scheduledTime).toISOString(), ...fire }, ...condition }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  /** The most recent fires, newest first. */
  async fires(name: string, limit: number): Promise<FireRecord[]> {
    const out = await this.ctx.doc.send(
      new QueryCommand({
        TableName: this.ctx.tableName,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': KEY.partition },
        ExpressionAttributeValues: { ':pk': firesPartition(name) },
        ScanIndexForward: false,
        Limit: limit,
        ConsistentRead: true,
      }),
    );
    return (out.Items ?? []).map((i) => ({
      scheduledTime: i.scheduledTime as number,
      firedAt: i.firedAt as number,
      ...(i.taskId ? { taskId: i.taskId as string } : {}),
      ...(i.error ? { error: i.error as string } : {}),
    }));
  }
}

function fromItem(item: Record<string, unknown>): ScheduleDefinition {
  const { pk: _pk, sk: _sk, task, ...rest } = item;
  return { ...(rest as Omit<ScheduleDefinition, 'task'>), task: JSON.parse(task as string) as ScheduleDefinition['task'] };
}
