/** Epoch milliseconds. Every time in Leasehold comes from an injected clock: DynamoDB has no server clock. */
export interface Clock {
  now(): number;
}

/** The process clock, optionally shifted (fault injection and skew tests give workers an offset). */
export function systemClock(offsetMs = 0): Clock {
  return { now: () => Date.now() + offsetMs };
}
