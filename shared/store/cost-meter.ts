/**
 * Counts the DynamoDB requests made inside a cost scope and the capacity DynamoDB reports for them:
 * SDK middleware on the store's client asks every request for its consumed capacity, and adds the
 * table's units to the scope the request was sent from (AsyncLocalStorage follows the awaits, so
 * parallel claims of one round each count their own). A conditional write DynamoDB refuses is billed
 * too but reports nothing: it counts the units of the item it was refused by, which on the lease path
 * is the task item, under 1 KB (body-layout.ts): 1 unit.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from './dynamo.js';
import type { TaskCost } from './task-cost.js';

type Counted = Pick<TaskCost, 'requests' | 'readUnits' | 'writeUnits'>;

/** What one scope has counted so far. */
export class CostCount implements Counted {
  requests = 0;
  readUnits = 0;
  writeUnits = 0;

  snapshot(): Counted {
    return { requests: this.requests, readUnits: this.readUnits, writeUnits: this.writeUnits };
  }
}

const scope = new AsyncLocalStorage<CostCount>();

/** Runs `work` counting every request it sends into `count` (nested scopes count in the innermost). */
export function countCost<T>(count: CostCount, work: () => Promise<T>): Promise<T> {
  return scope.run(count, work);
}

/**
 * Runs `work` outside every cost scope: requests the process makes for itself (the outcome counters'
 * flush, stats/outcome-recorder.ts), even when started from inside a task's scope, are no task's cost.
 */
export function uncounted<T>(work: () => Promise<T>): Promise<T> {
  return scope.exit(work);
}

const READS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan']);
const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']);
const metered = new WeakSet<object>();

interface ConsumedCapacity {
  CapacityUnits?: number;
  Table?: { CapacityUnits?: number };
}

/** Attaches the counting middleware to a client (once; the store does it to the client it is given). */
export function attachCostMeter(client: DynamoDBClient | DynamoDBDocumentClient): void {
  // A stand-in client (a test's fake) has no middleware: its requests are not counted.
  if (metered.has(client) || !('middlewareStack' in client)) return;
  metered.add(client);
  const operation = (context: { commandName?: string }) =>
    String(context.commandName ?? '').replace(/Command$/, '');
  // Before the request is serialized: ask for the consumed capacity.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const op = operation(context);
      if (scope.getStore() && (READS.has(op) || WRITES.has(op)))
        // INDEXES, not TOTAL: the table's own units, the same on DynamoDB and on dynalite (which reports
        // no index units); index writes are computed by their rules (write-units.ts).
        (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'INDEXES';
      return next(args);
    },
    { step: 'initialize', name: 'leaseholdCostMeterAsk', priority: 'high' },
  );
  // Around each send, the SDK's retries included: count it and what it consumed.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const count = scope.getStore();
      const op = operation(context);
      if (!count || !(READS.has(op) || WRITES.has(op))) return next(args);
      count.requests++;
      try {
        const out = await next(args);
        const consumed = [
          (out.output as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] }).ConsumedCapacity ?? [],
        ].flat();
        const units = consumed.reduce((sum, c) => sum + (c.Table?.CapacityUnits ?? c.CapacityUnits ?? 0), 0);
        if (READS.has(op)) count.readUnits += units;
        else count.writeUnits += units;
        return out;
      } catch (error) {
        if (WRITES.has(op) && isConditionalCheckFailed(error)) count.writeUnits += 1;
        throw error;
      }
    },
    { step: 'deserialize', name: 'leaseholdCostMeter', priority: 'high' },
  );
}
