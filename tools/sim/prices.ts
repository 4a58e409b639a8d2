/**
 * us-east-1 on-demand prices (2026) the sim's cost scripts price their counts at: DynamoDB Standard
 * table class (an eventually consistent read up to 4 KB is half a read unit, a strongly consistent one
 * a whole unit; an empty query still pays the minimum), Lambda on ARM, the HTTP API.
 */
export const PRICES = {
  readUnit: 0.125 / 1e6,
  writeUnit: 0.625 / 1e6,
  lambdaGbSecond: 0.0000133334,
  lambdaRequest: 0.2 / 1e6,
  httpApiRequest: 1.0 / 1e6,
};
