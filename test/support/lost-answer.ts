/**
 * Fault injection on the client side: lets a request reach DynamoDB, then throws away the answer as a
 * dropped connection would. The SDK retries, and the retry meets the state the first attempt made.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

export function dropNextAnswer(client: DynamoDBClient, operation: string): { readonly dropped: number } {
  const state = { armed: true, dropped: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      if (state.armed && context.commandName === `${operation}Command`) {
        state.armed = false;
        state.dropped++;
        throw Object.assign(new Error('socket hang up (answer dropped by the test)'), { code: 'ECONNRESET', $metadata: {} });
      }
      return out;
    },
    { step: 'deserialize', name: `dropAnswer${operation}${Math.random()}`, priority: 'high' },
  );
  return state;
}
