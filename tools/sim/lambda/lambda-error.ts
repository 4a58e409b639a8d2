/** What the Lambda Invoke API answers when it does not run the function. */
export class LambdaError extends Error {
  constructor(
    readonly code:
      | 'TooManyRequestsException'
      | 'AccessDeniedException'
      | 'ResourceNotFoundException'
      | 'RecursiveInvocationException',
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = code;
  }
}
