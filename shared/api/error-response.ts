/** How a failed request is answered: the error's own problem, 503 for throttling, 500 (logged) for the rest. */
import type { Logger } from '@aws-lambda-powertools/logger';
import {
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ThrottlingException,
} from '@aws-sdk/client-dynamodb';
import { describeError, LeaseholdError } from '../errors.js';
import { ScheduleSyncError } from '../schedules/schedule-errors.js';
import { problem, type ApiResponse } from './http.js';

/**
 * The answer to a failed request. A LeaseholdError answers with its own status, code, detail, problem
 * members and retry delay; DynamoDB throttling is a 503 to retry; anything else is a 500, logged.
 */
export function errorResponse(error: unknown, logger: Logger): ApiResponse {
  if (error instanceof LeaseholdError) {
    if (error.status >= 500 && error.retryAfterSeconds === undefined)
      logger.error('request failed on our side', { code: error.code, error: describeError(error) });
    return leaseholdProblem(error);
  }
  if (
    error instanceof ProvisionedThroughputExceededException ||
    error instanceof ThrottlingException ||
    error instanceof RequestLimitExceeded
  ) {
    return problem(503, 'THROTTLED', 'The task table is throttling requests; retry after a short wait.', {
      headers: { 'retry-after': '1' },
    });
  }
  logger.error('unexpected error in the API', { error: describeError(error) });
  return problem(500, 'INTERNAL_ERROR', 'Something went wrong on our side; the request may be retried.');
}

export function leaseholdProblem(error: LeaseholdError): ApiResponse {
  const { status, retryAfterSeconds } = error;
  return problem(status, error.code, httpDetail(error), {
    ...error.problemDetails(),
    ...(retryAfterSeconds === undefined ? {} : { headers: { 'retry-after': String(retryAfterSeconds) } }),
  });
}

/** The schedule service says what to do again in its own terms; over HTTP that is the same PUT, or the DELETE, sent again. */
function httpDetail(error: LeaseholdError): string {
  if (error instanceof ScheduleSyncError)
    return `${error.situation} ${error.action === 'save' ? 'Send the same PUT again to retry.' : 'Send the DELETE again to finish.'}`;
  return error.callerDetail();
}
