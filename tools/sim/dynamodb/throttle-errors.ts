/**
 * The answers DynamoDB gives a throttled request, so the AWS SDK classifies them as throttling and
 * retries them with backoff. On-demand tables answer ThrottlingException (HTTP 400) with the message
 * below, as seen from on-demand tables in the field (e.g. github.com/praetorian-inc/chariot-ui/issues/684,
 * github.com/cowinapi/developer.cowin/issues/151), and since 2025 with the reasons in
 * `throttlingReasons` (that member is lower-case on ThrottlingException, upper-case on
 * ProvisionedThroughputExceededException: see the SDK's DynamoDB model). A write throttled by a GSI gets
 * DynamoDB's message for indexes (github.com/BrighterCommand/Brighter/issues/2810). A transaction is
 * cancelled instead, with ThrottlingError as the cancellation reason of the throttled item.
 */
import type { ThrottleReason } from './throttle.js';

const TABLE_MESSAGE =
  'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html';
const INDEX_WRITE_MESSAGE =
  'Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is automatically scaling your index so please try again shortly.';

export const throttleMessage = (reason: ThrottleReason) =>
  reason.reason.startsWith('IndexWrite') ? INDEX_WRITE_MESSAGE : TABLE_MESSAGE;

export function throttlingException(reason: ThrottleReason): string {
  return JSON.stringify({
    __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException',
    message: throttleMessage(reason),
    throttlingReasons: [{ reason: reason.reason, resource: reason.resource }],
  });
}

/** TransactWriteItems / TransactGetItems: the whole transaction is cancelled; one reason per item. */
export function transactionThrottled(
  itemCount: number,
  throttledIndex: number,
  reason: ThrottleReason,
): string {
  const reasons = Array.from({ length: itemCount }, (_, i) =>
    i === throttledIndex ? { Code: 'ThrottlingError', Message: throttleMessage(reason) } : { Code: 'None' },
  );
  return JSON.stringify({
    __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
    Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
    CancellationReasons: reasons,
  });
}
