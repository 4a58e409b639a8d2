/**
 * Schedule definitions and fire records in the task table. A schedule is named per owner: two callers
 * may each have a `nightly`, and neither learns of the other's. Definitions are spread over
 * DEFINITION_SHARDS partitions (`SCHEDULES#<n>`, n from a hash of owner and name, sorted by
 * `<owner> NUL <name>`: the key follows from the two alone), so the consistent read every fire makes is
 * not one partition's load at the top of the hour. They are also in the owner index under
 * `SCHEDULES#<owner>`, so a caller's list reads that caller's definitions only (schedule-list.ts).
 * Fires have a partition per definition generation (`FIRES#<name>#<generation>`), sorted by scheduled
 * time, and expire with the table's TTL after the retention period: a name created again starts with
 * no history.
 */
import { readPartitionItems } from '../store/partition-items.js';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { StoreContext } from '../store/context.js';
import { isConditionalCheckFailed } from '../store/dynamo.js';
import { Expression } from '../store/update-expression.js';
import { SCHEDULE_OWNER_PREFIX } from '../task-inputs.js';
import { retentionExpiry } from '../lease-rules.js';
import { INDEX, KEY, TTL_ATTRIBUTE } from '../table-layout.js';
import { fnv1a } from '../ids.js';
import { definitionAsRead, definitionIsNew, fireIsNew, fireNotYetSucceeded } from './schedule-conditions.js';
import type {
  DefinitionRef,
  FireRecord,
  ScheduleDefinition,
  ScheduleTiming,
  SyncState,
} from './schedule-model.js';

/**
 * Partitions holding the definitions. Every fire reads its definition consistently (1 read unit per
 * 4 KB; up to 65 for a definition carrying a 256 KB payload), and one partition serves 3,000 read
 * units a second. Sixteen serve 48,000: EventBridge Scheduler's default 1,000 invocations a second
 * binds first for definitions up to about 190 KB. The local ticker reads all sixteen each second.
 */
export const DEFINITION_SHARDS = 16;
/** The prefix of every definitions partition, `SCHEDULES#<n>`. */
export const DEFINITIONS = 'SCHEDULES';
/** Owner and name, as one sort key: an owner (an ARN, or a local name) never holds NUL. */
const ownedName = (owner: string, name: string) => `${owner}\u0000${name}`;
/** The definitions partition `SCHEDULES#<n>` holding `owner`'s definition named `name`. */
export const definitionPartition = (owner: string, name: string) =>
  `${DEFINITIONS}#${fnv1a(`schedule#${ownedName(owner, name)}`) % DEFINITION_SHARDS}`;
const definitionPartitions = () => Array.from({ length: DEFINITION_SHARDS }, (_, n) => `${DEFINITIONS}#${n}`);
/** Whether a table partition key is one of the definitions partitions. */
export const isDefinitionPartition = (pk: string) => /^SCHEDULES#\d{1,2}$/.test(pk);
export const definitionKey = (owner: string, name: string) => ({
  [KEY.partition]: definitionPartition(owner, name),
  [KEY.sort]: ownedName(owner, name),
});
/** A definition's owner-index partition: no task owner may start with the prefix (task-inputs.ts). */
export const ownerPartition = (owner: string) => `${SCHEDULE_OWNER_PREFIX}${owner}`;
/** Definitions from before generations keep their fires in the old partition, `FIRES#<name>`. */
const firesPartition = (def: Pick<ScheduleDefinition, 'name' | 'generation'>) =>
  def.generation === undefined ? `FIRES#${def.name}` : `FIRES#${def.name}#${def.generation}`;
/** What the local ticker needs of every definition each second: no task, whose payload can weigh 256 KB. */
const TIMING_ATTRIBUTES = [
  'name',
  'owner',
  'generation',
  'expression',
  'timezone',
  'enabled',
  'updatedAt',
] as const;

export class ScheduleStore {
  constructor(readonly ctx: StoreContext) {}

  async get(owner: string, name: string): Promise<ScheduleDefinition | undefined> {
    const out = await this.ctx.doc.send(
      new GetCommand({
        TableName: this.ctx.tableName,
        Key: definitionKey(owner, name),
        ConsistentRead: true,
      }),
    );
    return out.Item ? fromItem(out.Item) : undefined;
  }

  /**
   * Every definition's timing (all owners): what the local ticker reads each second. A projection,
   * so the tasks (payloads up to 256 KB each) are not sent and parsed every second; a fire reads its
   * one definition in full. (DynamoDB would still bill the full items, but only the local stack ticks.)
   */
  async timings(): Promise<ScheduleTiming[]> {
    const shards = await Promise.all(definitionPartitions().map((pk) => this.timingsIn(pk)));
    // By owner and name, as one partition sorted them.
    const key = (t: ScheduleTiming) => ownedName(t.owner, t.name);
    return shards.flat().sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  }

  /** The timings in one definitions partition, every page of it. */
  private timingsIn(partition: string): Promise<ScheduleTiming[]> {
    return readPartitionItems<ScheduleTiming>({
      doc: this.ctx.doc,
      tableName: this.ctx.tableName,
      partition,
      consistent: true,
      attributes: TIMING_ATTRIBUTES,
    });
  }

  /**
   * Writes `def` over the definition read as `replacing` (or as a new name when that is undefined);
   * false when it changed since (another PUT or DELETE of the same owner's name).
   */
  async put(def: ScheduleDefinition, replacing: DefinitionRef | undefined): Promise<boolean> {
    const condition = new Expression()
      .require(replacing === undefined ? definitionIsNew : definitionAsRead(replacing))
      .params();
    return this.conditionally(
      new PutCommand({ TableName: this.ctx.tableName, Item: this.toItem(def), ...condition }),
    );
  }

  /** Records whether EventBridge Scheduler matches this version; false when the definition moved on meanwhile. */
  async setSyncState(ref: DefinitionRef, state: SyncState, error?: string): Promise<boolean> {
    return this.update(ref, new Expression().assign({ syncState: state, syncError: error }));
  }

  /** Stops fires of this version at once (a delete in progress): the fire handler checks `enabled`. */
  async disable(ref: DefinitionRef): Promise<boolean> {
    return this.update(ref, new Expression().set('enabled', false).set('syncState', 'PENDING'));
  }

  /** A one-time schedule fired: it stays, disabled, to show its fire, until the retention period ends. */
  async complete(ref: DefinitionRef, now: number): Promise<boolean> {
    return this.update(
      ref,
      new Expression()
        .set('enabled', false)
        .set('completedAt', now)
        .set(TTL_ATTRIBUTE, retentionExpiry(now, this.ctx.config)),
    );
  }

  async delete(ref: DefinitionRef): Promise<boolean> {
    const condition = new Expression().require(definitionAsRead(ref)).params();
    return this.conditionally(
      new DeleteCommand({
        TableName: this.ctx.tableName,
        Key: definitionKey(ref.owner, ref.name),
        ...condition,
      }),
    );
  }

  /** Records a tick's outcome; false when this tick already has a success (or, for a failure, any record). */
  async recordFire(def: Pick<ScheduleDefinition, 'name' | 'generation'>, fire: FireRecord): Promise<boolean> {
    const condition = new Expression()
      .require(fire.error === undefined ? fireNotYetSucceeded : fireIsNew)
      .params();
    const item = {
      [KEY.partition]: firesPartition(def),
      [KEY.sort]: new Date(fire.scheduledTime).toISOString(),
      ...fire,
      [TTL_ATTRIBUTE]: retentionExpiry(fire.firedAt, this.ctx.config),
    };
    return this.conditionally(
      new PutCommand({ TableName: this.ctx.tableName, Item: withoutUndefined(item), ...condition }),
    );
  }

  /** The most recent fires of this generation, newest first. */
  async fires(def: Pick<ScheduleDefinition, 'name' | 'generation'>, limit: number): Promise<FireRecord[]> {
    const out = await this.ctx.doc.send(
      new QueryCommand({
        TableName: this.ctx.tableName,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': KEY.partition },
        ExpressionAttributeValues: { ':pk': firesPartition(def) },
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

  private toItem(def: ScheduleDefinition): Record<string, unknown> {
    // A completed one-time schedule carries its expiry, also when a refused PUT puts it back.
    const expiry =
      def.completedAt === undefined
        ? {}
        : { [TTL_ATTRIBUTE]: retentionExpiry(def.completedAt, this.ctx.config) };
    const ownerIndex = { [INDEX.owner.partition]: ownerPartition(def.owner), [INDEX.owner.sort]: def.name };
    return withoutUndefined({
      ...definitionKey(def.owner, def.name),
      ...ownerIndex,
      ...def,
      ...expiry,
      task: JSON.stringify(def.task),
    });
  }

  private async update(ref: DefinitionRef, e: Expression): Promise<boolean> {
    e.require(definitionAsRead(ref));
    return this.conditionally(
      new UpdateCommand({
        TableName: this.ctx.tableName,
        Key: definitionKey(ref.owner, ref.name),
        ...e.params(),
      }),
    );
  }

  /** Sends a conditional write: true when it applied, false when its condition failed. */
  private async conditionally(command: PutCommand | UpdateCommand | DeleteCommand): Promise<boolean> {
    try {
      await this.ctx.doc.send(command as PutCommand);
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }
}

export function fromItem(item: Record<string, unknown>): ScheduleDefinition {
  const {
    pk: _pk,
    sk: _sk,
    ownerPk: _ownerPk,
    ownerSk: _ownerSk,
    [TTL_ATTRIBUTE]: _expires,
    task,
    ...rest
  } = item;
  return {
    ...(rest as Omit<ScheduleDefinition, 'task'>),
    task: JSON.parse(task as string) as ScheduleDefinition['task'],
  };
}

const withoutUndefined = (item: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(item).filter(([, v]) => v !== undefined));
