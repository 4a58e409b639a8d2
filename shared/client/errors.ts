/**
 * The client's errors. An answer in problem+json becomes an ApiProblemError (a subclass by status) with
 * the problem's fields; the direct client throws the same classes for the same problems.
 */
import type { Problem } from '../api/response-schemas.js';

export class ApiProblemError extends Error {
  override name = 'ApiProblemError';
  /** Stable for programs, e.g. VALIDATION_FAILED, TASK_NOT_FOUND, IDEMPOTENCY_CONFLICT, THROTTLED. */
  readonly code: string;
  /** What to fix, in words. */
  readonly detail: string;
  /** One per bad field of the request. */
  readonly errors: { field: string; message: string }[];
  /** The task a conflict is about (IDEMPOTENCY_CONFLICT). */
  readonly taskId: string | undefined;
  /** The status that refused the command (TASK_STATE_CONFLICT). */
  readonly taskStatus: string | undefined;
  /** Seconds after which the same request may succeed (the retry-after header). */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly status: number,
    readonly problem: Problem,
    retryAfterSeconds?: number,
  ) {
    super(problem.detail || `HTTP ${status}`);
    this.code = problem.code;
    this.detail = problem.detail;
    this.errors = problem.errors ?? [];
    this.taskId = problem.taskId;
    this.taskStatus = problem.taskStatus;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** 400, 413, 415: the request is wrong; `errors` names each bad field. Sending it again will not help. */
export class BadRequestError extends ApiProblemError {
  override name = 'BadRequestError';
}
/** 401 and 403: not signed, signed wrongly, or not allowed to call the API. */
export class AccessDeniedError extends ApiProblemError {
  override name = 'AccessDeniedError';
}
/** 404: no such task or schedule for this caller (another caller's is not found either). */
export class NotFoundError extends ApiProblemError {
  override name = 'NotFoundError';
}
/** 409: the task's state or an idempotency key's earlier request does not allow it. */
export class ConflictError extends ApiProblemError {
  override name = 'ConflictError';
}
/** 429 and 503 still answered after the client's retries: throttled or briefly unavailable. */
export class ServiceUnavailableError extends ApiProblemError {
  override name = 'ServiceUnavailableError';
}

/** The error class for an answer's status. */
export function problemError(status: number, problem: Problem, retryAfterSeconds?: number): ApiProblemError {
  const Class =
    status === 401 || status === 403
      ? AccessDeniedError
      : status === 404
        ? NotFoundError
        : status === 409
          ? ConflictError
          : status === 429 || status === 503
            ? ServiceUnavailableError
            : status >= 400 && status < 500
              ? BadRequestError
              : ApiProblemError;
  return new Class(status, problem, retryAfterSeconds);
}

/** The API could not be reached (DNS, refused, reset, timed out) after the client's retries. */
export class UnreachableError extends Error {
  override name = 'UnreachableError';
  readonly code = 'UNREACHABLE';
}

/** `waitFor` ran out of time; `task` is the task as last read. */
export class WaitTimeoutError extends Error {
  override name = 'WaitTimeoutError';
  readonly code = 'WAIT_TIMEOUT';
  constructor(
    readonly taskId: string,
    readonly task: unknown,
    timeoutMs: number,
  ) {
    super(`Task ${taskId} did not finish within ${timeoutMs} ms.`);
  }
}

/**
 * An answer the client cannot read: not what the API documents for the route (another service at the
 * URL, a proxy's page, a client and an API of different versions). `issues` says what did not fit.
 */
export class UnexpectedAnswerError extends Error {
  override name = 'UnexpectedAnswerError';
  readonly code = 'UNEXPECTED_ANSWER';
  constructor(
    /** The route asked, e.g. `GET /tasks/{id}`. */
    readonly route: string,
    readonly status: number,
    readonly issues: string[],
  ) {
    super(`${route} answered ${status} with a body the client cannot read: ${issues.join('; ')}`);
  }
}

/** createClient was given options it cannot work with (e.g. credentials and no region to sign for). */
export class ClientOptionsError extends Error {
  override name = 'ClientOptionsError';
  readonly code = 'CLIENT_OPTIONS_INVALID';
}

/** One request's answer did not come within the client's deadline: it may still have been acted on (retried as a lost answer). */
export class RequestDeadlineError extends Error {
  override name = 'RequestDeadlineError';
  readonly code = 'REQUEST_DEADLINE';
  constructor(readonly deadlineMs: number) {
    super(`No answer within ${deadlineMs} ms.`);
  }
}

/** STS answered GetCallerIdentity without an ARN: the direct client cannot tell whose tasks to use. */
export class CallerIdentityError extends Error {
  override name = 'CallerIdentityError';
  readonly code = 'CALLER_IDENTITY_UNKNOWN';
}
