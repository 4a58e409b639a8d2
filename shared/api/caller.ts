/** Who is calling: the IAM principal API Gateway authorised, never anything in the body. */
import type { APIGatewayProxyEventV2WithIAMAuthorizer } from 'aws-lambda';

/**
 * The local stack's stand-in for IAM: its HTTP bridge takes the caller from this header (development
 * only; API Gateway's IAM authorizer decides in AWS). The CLI sends it when told an owner.
 */
export const OWNER_HEADER = 'x-leasehold-owner';

/**
 * The owner of the caller's tasks. An assumed-role session is reduced to its role, so every session of
 * one role (each Lambda invocation, each CI job) sees the same tasks.
 */
export function callerOwner(
  event: Pick<APIGatewayProxyEventV2WithIAMAuthorizer, 'requestContext'>,
): string | undefined {
  const iam = event.requestContext?.authorizer?.iam;
  const arn = iam?.userArn;
  if (!arn) return iam?.accountId && iam.userId ? `${iam.accountId}:${iam.userId}` : undefined;
  return ownerOfArn(arn);
}

/**
 * The owner for a principal's ARN (as API Gateway's IAM authorizer or STS GetCallerIdentity gives it):
 * an assumed-role session becomes its role, anything else is itself. The direct client
 * (client/direct-client.ts) uses it too, so a task it enqueues is the caller's through the API as well.
 */
export function ownerOfArn(arn: string): string {
  const assumed = /^arn:(aws[\w-]*):sts::(\d+):assumed-role\/([^/]+)\/.+$/.exec(arn);
  return assumed ? `arn:${assumed[1]}:iam::${assumed[2]}:role/${assumed[3]}` : arn;
}
