/**
 * One request to the API, sent as often as the retry policy says: signed afresh for each attempt (a
 * SigV4 signature carries its time), the same body each time (so an enqueue keeps its idempotency
 * key), answered with whatever status came last. Whether an earlier attempt may have been acted on
 * (its answer lost on the way) is part of the answer: lost-answers.ts reads a repeat's answer with it.
 */
import { OWNER_HEADER } from '../api/caller.js';
import type { Clock } from '../clock.js';
import type { RandomSource } from '../ids.js';
import { RequestDeadlineError, UnreachableError } from './errors.js';
import {
  decideRetry,
  networkFailureOf,
  retryAfterMs,
  type AttemptOutcome,
  type RetryPolicy,
} from './retry-policy.js';
import type { RequestSigner } from './sigv4.js';

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export interface TransportOptions {
  /** The API's base URL, ending in `/` (a stage's path is kept). */
  baseUrl: URL;
  /** Signs each attempt (SigV4); none for the local stack. */
  signer: RequestSigner | undefined;
  /** Sent as X-Leasehold-Owner: the local stack's caller (development only; AWS takes it from IAM). */
  owner: string | undefined;
  fetch: typeof fetch;
  retry: RetryPolicy;
  random: RandomSource;
  sleep: Sleep;
  clock: Clock;
  /** One attempt's limit: a connection that stalls counts as a lost answer and is sent again. */
  requestTimeoutMs: number;
}

export interface ApiRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** The route for messages, e.g. `GET /tasks/{id}`. */
  route: string;
  /** The path under the base URL, segments already encoded, e.g. `tasks/abc/cancel`. */
  path: string;
  query?: Record<string, string | number | undefined>;
  /** JSON-encoded once, so every attempt sends the same bytes. */
  body?: unknown;
  /** Aborts the call (between attempts too) with the signal's reason; never retried. */
  signal?: AbortSignal | undefined;
}

export interface ApiAnswer {
  status: number;
  /** The body as JSON, its text if it is not JSON, undefined if empty. */
  body: unknown;
  retryAfterSeconds: number | undefined;
  attempts: number;
  /** An earlier attempt's answer was lost (a broken connection, a gateway timeout): it may have been acted on. */
  earlierAttemptMayHaveLanded: boolean;
}

export type Transport = (request: ApiRequest) => Promise<ApiAnswer>;

export function createTransport(options: TransportOptions): Transport {
  return async (request) => {
    const url = new URL(request.path.replace(/^\/+/, ''), options.baseUrl);
    for (const [key, value] of Object.entries(request.query ?? {}))
      if (value !== undefined) url.searchParams.set(key, String(value));
    const body = request.body === undefined ? undefined : JSON.stringify(request.body);
    let mayHaveLanded = false;
    for (let attempt = 1; ; attempt++) {
      request.signal?.throwIfAborted();
      let outcome: AttemptOutcome;
      let answer: ApiAnswer | undefined;
      try {
        answer = await sendOnce(options, request, url, body, attempt, mayHaveLanded);
        outcome = { kind: 'answer', status: answer.status, retryAfterMs: retryAfterOf(answer) };
      } catch (error) {
        if (request.signal?.aborted) throw request.signal.reason;
        const failure = networkFailureOf(error);
        if (!failure) throw error;
        outcome = { kind: 'network', failure };
        const decision = decideRetry(attempt, outcome, options.retry, options.random);
        mayHaveLanded ||= failure === 'lost';
        if (!decision.retry)
          throw new UnreachableError(
            `cannot reach the Leasehold API at ${options.baseUrl.href} (${describeNetworkError(error)}) after ${attempt} attempt${attempt === 1 ? '' : 's'}`,
            { cause: error },
          );
        await options.sleep(decision.delayMs, request.signal);
        continue;
      }
      const decision = decideRetry(attempt, outcome, options.retry, options.random);
      if (!decision.retry) return answer;
      // A gateway that timed out or failed may have handed the request on before it gave up.
      mayHaveLanded ||= answer.status === 502 || answer.status === 504;
      await options.sleep(decision.delayMs, request.signal);
    }
  };
}

async function sendOnce(
  options: TransportOptions,
  request: ApiRequest,
  url: URL,
  body: string | undefined,
  attempt: number,
  earlierAttemptMayHaveLanded: boolean,
): Promise<ApiAnswer> {
  let headers: Record<string, string> = {
    accept: 'application/json, application/problem+json',
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(options.owner ? { [OWNER_HEADER]: options.owner } : {}),
  };
  if (options.signer)
    headers = await options.signer(url, {
      method: request.method,
      headers,
      ...(body === undefined ? {} : { body }),
    });
  // The client's own deadline, aborting with an error of its own so it is told apart from the caller's abort.
  const deadline = new AbortController();
  const timer = setTimeout(
    () => deadline.abort(new RequestDeadlineError(options.requestTimeoutMs)),
    options.requestTimeoutMs,
  );
  const signal = request.signal ? AbortSignal.any([request.signal, deadline.signal]) : deadline.signal;
  let res: Response;
  let text: string;
  try {
    res = await options.fetch(url, {
      method: request.method,
      headers,
      signal,
      ...(body === undefined ? {} : { body }),
    });
    // Reading the body can fail too (the connection drops mid-answer): that is a lost answer as well.
    text = await res.text();
  } finally {
    clearTimeout(timer);
  }
  const retryAfter = retryAfterMs(res.headers.get('retry-after'), options.clock.now());
  return {
    status: res.status,
    body: parseBody(text),
    retryAfterSeconds: retryAfter === undefined ? undefined : Math.ceil(retryAfter / 1000),
    attempts: attempt,
    earlierAttemptMayHaveLanded,
  };
}

function retryAfterOf(answer: ApiAnswer): number | undefined {
  return answer.retryAfterSeconds === undefined ? undefined : answer.retryAfterSeconds * 1000;
}

function parseBody(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The socket's own words (ECONNREFUSED, other side closed), not fetch's "fetch failed". */
export function describeNetworkError(error: unknown): string {
  let e: unknown = error;
  for (let depth = 0; depth < 4; depth++) {
    const cause = (e as { cause?: unknown } | null)?.cause;
    if (cause === undefined || cause === null) break;
    e = cause;
  }
  const code = (e as { code?: unknown } | null)?.code;
  const message = e instanceof Error ? e.message : String(e);
  return typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message;
}
