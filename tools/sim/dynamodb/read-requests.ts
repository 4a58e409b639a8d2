/**
 * The reads the DynamoDB gate lets through (GetItem, Query, Scan, BatchGetItem, TransactGetItems):
 * refused while the table's, the GSI's or the partition key's read bucket is empty, forwarded (a GSI
 * read to the lagging index view), then charged per 4 KB returned, half for eventually consistent
 * reads, twice in a transaction. A throttled BatchGetItem key comes back in UnprocessedKeys.
 */
import type { BackendAnswer } from './backend.js';
import { itemSize, readUnits, type Item } from './capacity-units.js';
import { valueGiven } from './expression-values.js';
import { answer, batchThrottled, rewritten, withBody, type Forward, type Json } from './gate-answers.js';
import { valueString, type TableSchema } from './table-schemas.js';
import type { Demand, Throttle, ThrottleReason } from './throttle.js';
import { throttleMessage, throttlingException, transactionThrottled } from './throttle-errors.js';

export class ReadRequests {
  constructor(
    private readonly schemas: Map<string, TableSchema>,
    private readonly throttle: Throttle,
    /** The lagging index view of a table, when GSI reads lag. */
    private readonly viewOf: ((table: string) => string) | undefined,
  ) {}

  /** The partition-key value a Query's key condition names (`#pk = :v`, `pk = :v`, or legacy KeyConditions). */
  private queryPartition(body: Json, hashKey: string): string | undefined {
    const given = valueGiven(body.KeyConditionExpression, body, hashKey);
    if (given) return valueString(given);
    const legacy = (body.KeyConditions as Record<string, { AttributeValueList?: Item[] }> | undefined)?.[
      hashKey
    ];
    return legacy?.AttributeValueList?.[0] ? valueString(legacy.AttributeValueList[0]) : undefined;
  }

  async read(operation: string, body: Json, raw: Buffer, forward: Forward): Promise<BackendAnswer> {
    const schema = this.schemas.get(String(body.TableName));
    if (!schema) return forward(raw);
    const gsi = body.IndexName ? schema.gsis.find((g) => g.name === body.IndexName) : undefined;
    const consistent = body.ConsistentRead === true && !gsi;
    let partition: string | undefined;
    if (operation === 'GetItem') partition = valueString((body.Key as Item | undefined)?.[schema.hashKey]);
    else if (operation === 'Query') partition = this.queryPartition(body, gsi ? gsi.hashKey : schema.hashKey);
    const demand: Demand = {
      kind: 'read',
      table: schema.name,
      arn: gsi ? gsi.arn : schema.arn,
      ...(gsi ? { index: gsi.name } : {}),
      ...(partition !== undefined ? { partition } : {}),
    };
    const reason = this.throttle.refuse([demand]);
    if (reason) return answer(400, throttlingException(reason));
    const view = gsi ? this.viewOf?.(schema.name) : undefined;
    const out = await forward(view ? { ...body, TableName: view } : raw);
    if (out.status !== 200) {
      this.throttle.charge(demand, readUnits(0, consistent));
      if (!view) return out;
      return withBody(out, Buffer.from(out.body.toString('utf8').split(view).join(schema.name)));
    }
    const parsed = JSON.parse(out.body.toString('utf8')) as {
      Item?: Item;
      Items?: Item[];
      ConsumedCapacity?: { TableName?: string };
    };
    const bytes = parsed.Item
      ? itemSize(parsed.Item)
      : (parsed.Items ?? []).reduce((n, i) => n + itemSize(i), 0);
    this.throttle.charge(demand, readUnits(bytes, consistent));
    if (!view) return out;
    if (parsed.ConsumedCapacity?.TableName === view) parsed.ConsumedCapacity.TableName = schema.name;
    return rewritten(out, parsed);
  }

  async batchGet(body: Json, forward: Forward) {
    const requests = (body.RequestItems ?? {}) as Record<string, Json & { Keys?: Item[] }>;
    const kept: typeof requests = {};
    const unprocessed: typeof requests = {};
    let firstReason: ThrottleReason | undefined;
    for (const [table, spec] of Object.entries(requests)) {
      const schema = this.schemas.get(table);
      for (const key of spec.Keys ?? []) {
        const reason =
          schema &&
          this.throttle.refuse([
            { kind: 'read', table, arn: schema.arn, partition: valueString(key[schema.hashKey]) },
          ]);
        const target = reason ? unprocessed : kept;
        firstReason ??= reason || undefined;
        (target[table] ??= { ...spec, Keys: [] }).Keys!.push(key);
      }
    }
    if (firstReason && Object.keys(kept).length === 0)
      return answer(400, batchThrottled(throttleMessage(firstReason), firstReason));
    const out = await forward(firstReason ? { ...body, RequestItems: kept } : body);
    if (out.status !== 200) return out;
    const parsed = JSON.parse(out.body.toString('utf8')) as {
      Responses?: Record<string, Item[]>;
      UnprocessedKeys?: typeof requests;
    };
    for (const [table, items] of Object.entries(parsed.Responses ?? {})) {
      const schema = this.schemas.get(table);
      const consistent = requests[table]?.ConsistentRead === true;
      for (const item of schema ? items : [])
        this.throttle.charge(
          { kind: 'read', table, arn: schema!.arn, partition: valueString(item[schema!.hashKey]) },
          readUnits(itemSize(item), consistent),
        );
    }
    if (!firstReason) return out;
    const merged = parsed.UnprocessedKeys ?? {};
    for (const [table, spec] of Object.entries(unprocessed))
      merged[table] = { ...spec, Keys: [...(merged[table]?.Keys ?? []), ...(spec.Keys ?? [])] };
    return rewritten(out, { ...parsed, UnprocessedKeys: merged });
  }

  async transactGet(body: Json, raw: Buffer, forward: Forward) {
    const items = (body.TransactItems ?? []) as { Get?: { TableName?: string; Key?: Item } }[];
    const demands = items.map((item) => {
      const schema = this.schemas.get(String(item.Get?.TableName));
      return schema && item.Get?.Key
        ? ({
            kind: 'read',
            table: schema.name,
            arn: schema.arn,
            partition: valueString(item.Get.Key[schema.hashKey]),
          } satisfies Demand)
        : undefined;
    });
    for (const [i, d] of demands.entries()) {
      const reason = d && this.throttle.refuse([d]);
      if (reason) return answer(400, transactionThrottled(items.length, i, reason));
    }
    const out = await forward(raw);
    if (out.status !== 200) return out;
    const responses = (JSON.parse(out.body.toString('utf8')) as { Responses?: { Item?: Item }[] }).Responses;
    // Transactional reads cost two units per 4 KB.
    demands.forEach(
      (d, i) => d && this.throttle.charge(d, readUnits(itemSize(responses?.[i]?.Item), true) * 2),
    );
    return out;
  }
}
