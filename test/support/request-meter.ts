/**
 * Counts DynamoDB requests by operation with SDK middleware, including each retry the SDK sends, and
 * the capacity DynamoDB reports when asked (`ReturnConsumedCapacity` is added to every request).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

interface Consumed {
  CapacityUnits?: number;
  Table?: { CapacityUnits?: number };
}

export class RequestMeter {
  readonly sent = new Map<string, number>();
  readonly capacity = new Map<string, number>();
  /**
   * The table's own units (index units aside): what a task's `cost` counts as read and write units.
   * DynamoDB and DynamoDB Local report index units apart; dynalite reports none, so there both agree.
   */
  readonly tableCapacity = new Map<string, number>();
  /**
   * Requests and reported units by the kind of partition their item is in (a key's text before its
   * first `#`: `TASK`, `STATS`, `LIMIT`, ...; `QUEUE`), for requests that name one item (Key or Item).
   * What the process writes for itself (the outcome counters, `STATS`) is told apart from a task's.
   */
  readonly byPartition = new Map<string, { requests: number; capacity: number }>();

  attach(client: DynamoDBClient | DynamoDBDocumentClient): void {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const op = String(context.commandName ?? '').replace(/Command$/, '');
        const input = args.input as { ReturnConsumedCapacity?: string };
        if (CAPACITY_OPERATIONS.has(op)) input.ReturnConsumedCapacity ??= 'INDEXES';
        return next(args);
      },
      { step: 'initialize', name: 'leaseholdAskForCapacity', priority: 'high' },
    );
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const op = String(context.commandName ?? 'unknown').replace(/Command$/, '');
        this.sent.set(op, (this.sent.get(op) ?? 0) + 1);
        const out = await next(args);
        const consumed = [
          (out.output as { ConsumedCapacity?: Consumed | Consumed[] } | undefined)?.ConsumedCapacity ?? [],
        ].flat();
        const units = consumed.reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
        const tableUnits = consumed.reduce(
          (sum, c) => sum + (c.Table?.CapacityUnits ?? c.CapacityUnits ?? 0),
          0,
        );
        this.capacity.set(op, (this.capacity.get(op) ?? 0) + units);
        this.tableCapacity.set(op, (this.tableCapacity.get(op) ?? 0) + tableUnits);
        const kind = partitionKind(args.input);
        if (kind !== undefined) {
          const tally = this.byPartition.get(kind) ?? { requests: 0, capacity: 0 };
          this.byPartition.set(kind, { requests: tally.requests + 1, capacity: tally.capacity + units });
        }
        return out;
      },
      { step: 'deserialize', name: 'leaseholdRequestMeter', priority: 'high' },
    );
  }

  count(...ops: string[]): number {
    return ops.reduce((sum, op) => sum + (this.sent.get(op) ?? 0), 0);
  }

  /** Requests and units on items of one kind of partition (see byPartition). */
  partition(kind: string): { requests: number; capacity: number } {
    return this.byPartition.get(kind) ?? { requests: 0, capacity: 0 };
  }

  reset(): void {
    this.sent.clear();
    this.capacity.clear();
    this.tableCapacity.clear();
    this.byPartition.clear();
  }
}

/** The kind of partition the one item a request names is in (its pk, marshalled or not, up to the first `#`). */
function partitionKind(input: unknown): string | undefined {
  const named = input as { Key?: { pk?: unknown }; Item?: { pk?: unknown } } | undefined;
  const pk = named?.Key?.pk ?? named?.Item?.pk;
  const text =
    typeof pk === 'string'
      ? pk
      : typeof (pk as { S?: unknown })?.S === 'string'
        ? (pk as { S: string }).S
        : '';
  return text === '' ? undefined : text.split('#')[0];
}

const CAPACITY_OPERATIONS = new Set([
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'GetItem',
  'Query',
  'Scan',
  'BatchGetItem',
  'BatchWriteItem',
]);

export const WRITE_OPERATIONS = [
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'BatchWriteItem',
  'TransactWriteItems',
];
export const QUERY_OPERATIONS = ['Query'];
export const READ_OPERATIONS = ['GetItem', 'BatchGetItem'];
