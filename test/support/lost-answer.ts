/**
 * Fault injection on the client side: lets a request reach DynamoDB, then throws away the answer as a
 * dropped connection would. The SDK retries, and the retry meets the state the first attempt made.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * `as: 'network'` is a dropped connection (the SDK retries it itself); `as: 'deadline'` is our own
 * AbortSignal deadline firing after the write applied (the SDK gives up; the store retries).
 */
export function dropNextAnswer(
  client: DynamoDBClient,
  operation: string,
  as: 'network' | 'deadline' = 'network',
): { readonly dropped: number } {
  const state = { armed: true, dropped: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      if (state.armed && context.commandName === `${operation}Command`) {
        state.armed = false;
        state.dropped++;
        if (as === 'deadline')
          throw Object.assign(new Error('Request aborted (deadline, injected by the test)'), {
            name: 'AbortError',
          });
        throw Object.assign(new Error('socket hang up (answer dropped by the test)'), {
          code: 'ECONNRESET',
          $metadata: {},
        });
      }
      return out;
    },
    { step: 'deserialize', name: `dropAnswer${operation}${Math.random()}`, priority: 'high' },
  );
  return state;
}
