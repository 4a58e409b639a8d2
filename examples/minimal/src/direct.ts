/**
 * Enqueue straight to the table from trusted code in the same account (no API Gateway hop): the
 * construct's `table` and `lambdas.worker` give the names, `directClientPolicy(...)` the narrowest
 * policy it works with (docs/api.md, "Direct mode").
 */
import { createDirectClient, type DirectClient } from 'leasehold/client/direct';
import { taskDefinitions } from './tasks.js';

export function directClient(tableName: string, workerFunctionName: string): DirectClient {
  return createDirectClient({ tableName, workerFunctionName, definitions: taskDefinitions });
}
