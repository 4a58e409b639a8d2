/**
 * The writes the DynamoDB gate lets through (PutItem, UpdateItem, DeleteItem, BatchWriteItem,
 * TransactWriteItems): refused while a table, partition-key or GSI-partition bucket they would write
 * is empty, forwarded, then charged once the item's new image is known (the write tracker hands it on,
 * with the index lag). A throttled single write is a ThrottlingException, a throttled transaction item
 * cancels the transaction, throttled batch items come back as UnprocessedItems.
 */
import { indexEntry, indexWriteUnits } from './index-entries.js';
import type { BackendAnswer } from './backend.js';
import { itemSize, writeUnits, type Item } from './capacity-units.js';
import { valueGiven } from './expression-values.js';
import { answer, batchThrottled, rewritten, type Forward, type Json } from './gate-answers.js';
import { keyOf, valueString, type TableSchema } from './table-schemas.js';
import type { Demand, Throttle, ThrottleReason } from './throttle.js';
import { throttleMessage, throttlingException, transactionThrottled } from './throttle-errors.js';
import type { ImageSource, KnownItem, WriteTracker } from './write-tracker.js';

interface WriteOp {
  schema: TableSchema;
  key: Item;
  /** The whole item, for a Put. */
  put?: Item;
  /** The request (or transaction item) of an Update, for the GSI keys its SET clauses give. */
  update?: Json;
  kind: 'put' | 'update' | 'delete' | 'check';
}

export class WriteRequests {
  constructor(
    private readonly schemas: Map<string, TableSchema>,
    private readonly throttle: Throttle,
    private readonly tracker: WriteTracker,
  ) {}

  private writeOp(
    kind: WriteOp['kind'],
    tableName: unknown,
    itemOrKey: unknown,
    update?: Json,
  ): WriteOp | undefined {
    const schema = this.schemas.get(String(tableName));
    if (!schema || !itemOrKey || typeof itemOrKey !== 'object') return undefined;
    const item = itemOrKey as Item;
    if (!item[schema.hashKey] || (schema.rangeKey && !item[schema.rangeKey])) return undefined;
    return {
      schema,
      key: keyOf(schema, item),
      kind,
      ...(kind === 'put' ? { put: item } : {}),
      ...(kind === 'update' && update ? { update } : {}),
    };
  }

  /** The table, partition and GSI partitions a write may touch, as known before it runs. */
  private writeDemands(op: WriteOp): Demand[] {
    const { schema } = op;
    const demands: Demand[] = [
      { kind: 'write', table: schema.name, arn: schema.arn, partition: valueString(op.key[schema.hashKey]) },
    ];
    if (op.kind === 'check') return demands;
    const known = this.tracker.known(schema, op.key);
    schema.gsis.forEach((gsi, i) => {
      const partitions = new Set<string>();
      const old = known?.gsiPartitions[i];
      if (old !== undefined) partitions.add(old);
      const next = op.put
        ? op.put[gsi.hashKey]
        : op.update && valueGiven(op.update.UpdateExpression, op.update, gsi.hashKey);
      if (next) partitions.add(valueString(next));
      for (const partition of partitions)
        demands.push({ kind: 'write', table: schema.name, index: gsi.name, arn: gsi.arn, partition });
    });
    return demands;
  }

  /**
   * Charges a completed write: the larger of the old and new item per KB to the table, and to each GSI
   * what the write changed in it (index-entries.ts).
   */
  chargeWrite(
    schema: TableSchema,
    key: Item,
    image: Item | undefined,
    old: KnownItem | undefined,
    multiplier: number,
  ): void {
    if (multiplier <= 0) return;
    const newSize = itemSize(image);
    const oldSize = old?.size ?? 0;
    const partition = valueString(key[schema.hashKey]);
    this.throttle.charge(
      { kind: 'write', table: schema.name, arn: schema.arn, partition },
      writeUnits(Math.max(oldSize, newSize)) * multiplier,
    );
    schema.gsis.forEach((gsi, i) => {
      const before = old?.gsiEntries[i];
      const after = indexEntry(schema, gsi, image);
      const units = indexWriteUnits(before, after) * multiplier;
      if (units === 0) return;
      const index = { kind: 'write' as const, table: schema.name, index: gsi.name, arn: gsi.arn };
      // The index partition that takes the write: the new entry's, or the removed one's.
      const beforePartition = old?.gsiPartitions[i];
      const afterPartition = image?.[gsi.hashKey] ? valueString(image[gsi.hashKey]) : undefined;
      if (before && after && before.key !== after.key && beforePartition !== afterPartition) {
        this.throttle.charge({ ...index, partition: beforePartition! }, writeUnits(before.size) * multiplier);
        this.throttle.charge({ ...index, partition: afterPartition! }, writeUnits(after.size) * multiplier);
      } else this.throttle.charge({ ...index, partition: (afterPartition ?? beforePartition)! }, units);
    });
  }

  /** A write that changed nothing (a failed condition) still consumes a write unit of its table and key. */
  private chargeFailedWrite(op: WriteOp, multiplier = 1): void {
    this.throttle.charge(
      {
        kind: 'write',
        table: op.schema.name,
        arn: op.schema.arn,
        partition: valueString(op.key[op.schema.hashKey]),
      },
      writeUnits(itemSize(op.put)) * multiplier,
    );
  }

  async singleWrite(operation: string, body: Json, raw: Buffer, forward: Forward): Promise<BackendAnswer> {
    const op =
      operation === 'PutItem'
        ? this.writeOp('put', body.TableName, body.Item)
        : this.writeOp(operation === 'UpdateItem' ? 'update' : 'delete', body.TableName, body.Key, body);
    if (!op) return forward(raw);
    const reason = this.throttle.refuse(this.writeDemands(op));
    if (reason) return answer(400, throttlingException(reason));
    const end = this.tracker.begin(op.schema, op.key);
    let out: BackendAnswer | undefined;
    try {
      out = await forward(raw);
    } finally {
      end(out?.status === 200 ? this.imageSource(op, body, out) : undefined, 1);
    }
    if (out.status !== 200) this.chargeFailedWrite(op);
    return out;
  }

  /** Where the item's new image comes from: the request itself, the answer, or a read of the item. */
  private imageSource(op: WriteOp, body: Json, out?: BackendAnswer): ImageSource {
    if (op.kind === 'put') return { kind: 'image', image: op.put! };
    if (op.kind === 'delete') return { kind: 'absent' };
    if (out && body.ReturnValues === 'ALL_NEW') {
      const attributes = (JSON.parse(out.body.toString('utf8')) as { Attributes?: Item }).Attributes;
      if (attributes) return { kind: 'image', image: attributes };
    }
    return { kind: 'read' };
  }

  async batchWrite(body: Json, forward: Forward) {
    const requests = (body.RequestItems ?? {}) as Record<string, Json[]>;
    const kept: Record<string, Json[]> = {};
    const unprocessed: Record<string, Json[]> = {};
    const ops: WriteOp[] = [];
    let firstReason: ThrottleReason | undefined;
    for (const [table, list] of Object.entries(requests)) {
      for (const request of list ?? []) {
        const put = request.PutRequest as { Item?: Item } | undefined;
        const del = request.DeleteRequest as { Key?: Item } | undefined;
        const op = put ? this.writeOp('put', table, put.Item) : this.writeOp('delete', table, del?.Key);
        const reason = op && this.throttle.refuse(this.writeDemands(op));
        if (reason) {
          // DynamoDB hands throttled items of a batch back as UnprocessedItems.
          firstReason ??= reason;
          (unprocessed[table] ??= []).push(request);
          continue;
        }
        (kept[table] ??= []).push(request);
        if (op) ops.push(op);
      }
    }
    if (firstReason && Object.keys(kept).length === 0)
      // None processed: BatchWriteItem's API reference says it then fails with ProvisionedThroughputExceededException.
      return answer(400, batchThrottled(throttleMessage(firstReason), firstReason));
    const ends = ops.map((op) => ({ op, end: this.tracker.begin(op.schema, op.key) }));
    let out: BackendAnswer | undefined;
    try {
      out = await forward(firstReason ? { ...body, RequestItems: kept } : body);
    } finally {
      const leftover =
        out?.status === 200
          ? ((JSON.parse(out.body.toString('utf8')) as { UnprocessedItems?: Record<string, Json[]> })
              .UnprocessedItems ?? {})
          : {};
      const unapplied = new Set(
        Object.values(leftover)
          .flat()
          .map((r) => JSON.stringify(r)),
      );
      for (const { op, end } of ends) {
        const request = op.put ? { PutRequest: { Item: op.put } } : { DeleteRequest: { Key: op.key } };
        const applied = out?.status === 200 && !unapplied.has(JSON.stringify(request));
        end(applied ? this.imageSource(op, {}) : undefined, 1);
      }
    }
    if (!firstReason || out.status !== 200) return out;
    const parsed = JSON.parse(out.body.toString('utf8')) as { UnprocessedItems?: Record<string, Json[]> };
    const merged = parsed.UnprocessedItems ?? {};
    for (const [table, list] of Object.entries(unprocessed))
      merged[table] = [...(merged[table] ?? []), ...list];
    return rewritten(out, { ...parsed, UnprocessedItems: merged });
  }

  async transactWrite(body: Json, raw: Buffer, forward: Forward) {
    const items = (body.TransactItems ?? []) as Record<string, Json>[];
    const ops = items.map((item) => {
      const [action, spec] = Object.entries(item)[0] ?? ['', {}];
      const kind = ({ Put: 'put', Update: 'update', Delete: 'delete', ConditionCheck: 'check' } as const)[
        action as 'Put'
      ];
      return kind
        ? this.writeOp(kind, spec.TableName, kind === 'put' ? spec.Item : spec.Key, spec)
        : undefined;
    });
    for (const [i, op] of ops.entries()) {
      const reason = op && this.throttle.refuse(this.writeDemands(op));
      if (reason) return answer(400, transactionThrottled(items.length, i, reason));
    }
    const live = ops.filter((op): op is WriteOp => op !== undefined && op.kind !== 'check');
    const ends = live.map((op) => ({ op, end: this.tracker.begin(op.schema, op.key) }));
    let out: BackendAnswer | undefined;
    try {
      out = await forward(raw);
    } finally {
      // Transactional writes cost two units per KB.
      for (const { op, end } of ends) end(out?.status === 200 ? this.imageSource(op, {}) : undefined, 2);
    }
    if (out.status !== 200) for (const op of live) this.chargeFailedWrite(op, 2);
    return out;
  }
}
