/**
 * Rate limits without transactions (pure rules): a limit of N starts in any window of `intervalMs` is N
 * start tokens, each used at most once per `intervalMs`. A start takes a token whose last use is at least
 * the interval before the start's time, and the claim writes that same time as the task's `startedAt`.
 * So the starts one token gave are `intervalMs` apart or more, a window of `intervalMs` holds at most
 * one start per token, and never more than N in all, whichever workers, processes or clocks took them.
 * A holder that dies holds nothing: a token frees itself by time.
 */

export interface RateLimit {
  /** Starts allowed in any window of `intervalMs` (1 to MAX_RATE_LIMIT). */
  limit: number;
  intervalMs: number;
}

/** The most tokens one limit has: one partition's worth of token writes (1,000 a second). */
export const MAX_RATE_LIMIT = 1_000;
/** The longest window: a day. */
export const MAX_RATE_INTERVAL_MS = 86_400_000;

/**
 * Which tokens a claimer takes as soon as they free (`owns`); the others only after `graceMs` more, so
 * their owners, placed elsewhere in the fleet, take them first and claimers rarely race for one token
 * (a refused write is billed). An unplaced claimer owns every token.
 */
export interface TokenShare {
  owns: (index: number) => boolean;
  graceMs: number;
}

export const EVERY_TOKEN: TokenShare = { owns: () => true, graceMs: 0 };

/** When token `index`, last used at `usedAt`, frees for this claimer. */
const freeFrom = (usedAt: number | undefined, index: number, rate: RateLimit, share: TokenShare): number =>
  usedAt === undefined
    ? Number.NEGATIVE_INFINITY
    : usedAt + rate.intervalMs + (share.owns(index) ? 0 : share.graceMs);

/** The indexes of the tokens free at `startAt` for this claimer, its own first, given each token's last use. */
export function freeTokens(
  usedAt: ReadonlyMap<number, number>,
  rate: RateLimit,
  startAt: number,
  share: TokenShare = EVERY_TOKEN,
): number[] {
  const free = [...Array(rate.limit).keys()].filter(
    (i) => freeFrom(usedAt.get(i), i, rate, share) <= startAt,
  );
  return [...free.filter((i) => share.owns(i)), ...free.filter((i) => !share.owns(i))];
}

/** When the next token frees for this claimer; `startAt` when one is free now. */
export function nextTokenFreeAt(
  usedAt: ReadonlyMap<number, number>,
  rate: RateLimit,
  startAt: number,
  share: TokenShare = EVERY_TOKEN,
): number {
  if (freeTokens(usedAt, rate, startAt, share).length > 0) return startAt;
  return Math.min(...[...Array(rate.limit).keys()].map((i) => freeFrom(usedAt.get(i), i, rate, share)));
}
