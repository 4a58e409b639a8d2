/**
 * Scheduler's error answers. A rest-json AWS service names the error in the `x-amzn-errortype` header
 * and says why in the body's `Message`; the SDK turns the type into the exception class
 * (ValidationException 400, ResourceNotFoundException 404, ConflictException 409,
 * ServiceQuotaExceededException 402, ThrottlingException 429, InternalServerException 500: the
 * scheduler-2021-06-30 service model, botocore data/scheduler/2021-06-30/service-2.json).
 * AccessDeniedException (403) is the common IAM answer every AWS service gives.
 */
export type SchedulerErrorType =
  | 'ValidationException'
  | 'ResourceNotFoundException'
  | 'ConflictException'
  | 'AccessDeniedException'
  | 'ServiceQuotaExceededException'
  | 'ThrottlingException'
  | 'InternalServerException'
  | 'UnknownOperationException';

const STATUS: Record<SchedulerErrorType, number> = {
  ValidationException: 400,
  ResourceNotFoundException: 404,
  ConflictException: 409,
  AccessDeniedException: 403,
  ServiceQuotaExceededException: 402,
  ThrottlingException: 429,
  InternalServerException: 500,
  UnknownOperationException: 404,
};

export class SchedulerError extends Error {
  override name = 'SchedulerError';
  readonly status: number;
  constructor(
    readonly type: SchedulerErrorType,
    message: string,
  ) {
    super(message);
    this.status = STATUS[type];
  }
}
