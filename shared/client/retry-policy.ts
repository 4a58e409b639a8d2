/**
 * When the client sends a request again, and how long it waits first. Pure: the transport
 * (http-transport.ts) asks after each attempt, with the random source and clock it was given.
 *
 * Sent again: 429 and 503 (throttled or briefly unavailable: the API did not act), 502 and 504 (the
 * gateway lost the function's answer: as good as a lost answer), and network failures. Every request
 * the client sends is safe to repeat: GET, PUT and DELETE are idempotent, and each enqueue carries an
 * idempotency key kept across its attempts (lost-answers.ts reads the answers a repeat can bring).
 */
import type { RandomSource } from '../ids.js';
import { RequestDeadlineError } from './errors.js';

export interface RetryPolicy {
  /** Attempts in all, the first included (1 sends once). */
  attempts: number;
  /** The first wait's upper bound; each further wait's doubles, up to maxMs. */
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseMs: 200, maxMs: 5_000 };

/**
 * The longest retry-after the client waits for within one call: a server asking for more is
 * answered with the error (its retryAfterSeconds says when), the caller decides whether to wait.
 */
export const MAX_RETRY_AFTER_MS = 30_000;

/** How a network failure left the request: `not-sent` never reached the API; `lost` may have been acted on. */
export type NetworkFailure = 'not-sent' | 'lost';

/** What one attempt came to. */
export type AttemptOutcome =
  | { kind: 'answer'; status: number; retryAfterMs?: number | undefined }
  | { kind: 'network'; failure: NetworkFailure };

export type RetryDecision = { retry: true; delayMs: number } | { retry: false };

const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);

export function isRetryableStatus(status: number): boolean {
  return RETRYABLE_STATUSES.has(status);
}

/**
 * After attempt `attempt` (1 for the first) came to `outcome`: send again, and after how long.
 * Exponential backoff with full jitter (uniform below the cap, so many clients throttled together do
 * not come back together), never shorter than a retry-after the server asked for.
 */
export function decideRetry(
  attempt: number,
  outcome: AttemptOutcome,
  policy: RetryPolicy,
  random: RandomSource,
): RetryDecision {
  if (attempt >= policy.attempts) return { retry: false };
  if (outcome.kind === 'answer') {
    if (!isRetryableStatus(outcome.status)) return { retry: false };
    if (outcome.retryAfterMs !== undefined && outcome.retryAfterMs > MAX_RETRY_AFTER_MS)
      return { retry: false };
  }
  const jittered = backoffMs(attempt, policy, random);
  const asked = outcome.kind === 'answer' ? (outcome.retryAfterMs ?? 0) : 0;
  return { retry: true, delayMs: Math.max(jittered, asked) };
}

/** The wait before resend number `resend` (1 for the first): uniform in [0, min(maxMs, baseMs * 2^(resend-1))). */
export function backoffMs(
  resend: number,
  policy: Pick<RetryPolicy, 'baseMs' | 'maxMs'>,
  random: RandomSource,
): number {
  const cap = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, resend - 1));
  return Math.floor(random() * cap);
}

/** A retry-after header (delta-seconds or an HTTP date) in milliseconds from `now`; undefined if absent or unreadable. */
export function retryAfterMs(header: string | null | undefined, now: number): number | undefined {
  if (header === null || header === undefined || header.trim() === '') return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Codes of failures before the request left: nothing reached the API. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);
/** Codes of a connection that broke or stalled once open: the request may have been acted on. */
const LOST_CODES = new Set([
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * Whether an error thrown by fetch (or by reading its body) is a network failure, and which kind;
 * undefined for anything else (a programming error, an abort by the caller), which is not retried.
 * fetch wraps the socket's error: TypeError('fetch failed', { cause }) or TypeError('terminated').
 */
export function networkFailureOf(error: unknown): NetworkFailure | undefined {
  const codes = errorCodes(error);
  if (codes.some((c) => NOT_SENT_CODES.has(c))) return 'not-sent';
  if (codes.some((c) => LOST_CODES.has(c))) return 'lost';
  // The client's own per-request deadline (AbortSignal.timeout): the request may be in the API's hands.
  if (error instanceof RequestDeadlineError) return 'lost';
  if (error instanceof TypeError && /fetch failed|terminated|socket|network/i.test(error.message))
    return 'lost';
  return undefined;
}

/** The `code`s along an error's cause chain (and an AggregateError's errors: a refused dual-stack connect). */
function errorCodes(error: unknown, depth = 0): string[] {
  if (depth > 5 || typeof error !== 'object' || error === null) return [];
  const e = error as { code?: unknown; cause?: unknown; errors?: unknown };
  return [
    ...(typeof e.code === 'string' ? [e.code] : []),
    ...errorCodes(e.cause, depth + 1),
    ...(Array.isArray(e.errors) ? e.errors.flatMap((x) => errorCodes(x, depth + 1)) : []),
  ];
}
