/**
 * The direct client's errors: what the HTTP client would throw for the same failure. The API's own
 * mapping (errorResponse) turns the error into its problem answer, and `problemError` into the client's
 * class for that answer, so a caller's `catch` does not depend on which client it holds.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import {
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ThrottlingException,
} from '@aws-sdk/client-dynamodb';
import { errorResponse } from '../api/error-response.js';
import { problemSchema } from '../api/response-schemas.js';
import { LeaseholdError } from '../errors.js';
import { problemError, type ApiProblemError } from './errors.js';

// The error reaches the caller with the original as its cause; a library should not log it as well.
const silent = new Logger({ serviceName: 'leasehold-direct-client', logLevel: 'SILENT' });

/** Throttling the SDK still met after its own retries (standard mode: 3 attempts): the API answers it 503. */
function isThrottling(error: unknown): boolean {
  return (
    error instanceof ProvisionedThroughputExceededException ||
    error instanceof ThrottlingException ||
    error instanceof RequestLimitExceeded
  );
}

/**
 * The client error for `error`: a LeaseholdError (a refused payload, a missing task, a conflict) or
 * DynamoDB throttling becomes the ApiProblemError subclass the API's answer would give, with the
 * original as `cause`. Anything else (AccessDeniedException, a network fault, a bug) is returned as it
 * is: the caller's own AWS setup is at fault, and the SDK's error says how.
 */
export function clientErrorOf(error: unknown): unknown {
  if (!(error instanceof LeaseholdError) && !isThrottling(error)) return error;
  const response = errorResponse(error, silent);
  const problem = problemSchema.parse(JSON.parse(response.body));
  const retryAfter = response.headers['retry-after'];
  const clientError: ApiProblemError = problemError(
    response.statusCode,
    problem,
    retryAfter === undefined ? undefined : Number(retryAfter),
  );
  clientError.cause = error;
  return clientError;
}

/** Runs `call`, throwing the client error for what it throws. */
export async function asClientCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw clientErrorOf(error);
  }
}
