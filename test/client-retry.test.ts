/**
 * The client's retry rules, pure: when a request is sent again and after how long (a fixed random
 * source, recorded sleeps, no real waiting), how a repeat's answer is read after a lost one, how tasks
 * are cut into batches, and what the transport does with each answer (an injected fetch).
 */
import { describe, expect, it } from 'vitest';
import {
  backoffMs,
  decideRetry,
  DEFAULT_RETRY,
  MAX_RETRY_AFTER_MS,
  networkFailureOf,
  retryAfterMs,
  type RetryPolicy,
} from '../shared/client/retry-policy.js';
import { commandMayHaveLanded, createdByThisCall, deletedByThisCall } from '../shared/client/lost-answers.js';
import { chunksOf } from '../shared/client/batch-chunks.js';
import { enqueueBodyOf, wholeSecondsUp } from '../shared/client/enqueue-body.js';
import { createTransport, type TransportOptions } from '../shared/client/http-transport.js';
import { nextInterval, waitForTask } from '../shared/client/wait-for.js';
import { RequestDeadlineError, UnreachableError, WaitTimeoutError } from '../shared/client/errors.js';
import { problemOf } from '../shared/client/answers.js';
import type { ClientTask } from '../shared/client/client-types.js';

const policy: RetryPolicy = { attempts: 5, baseMs: 100, maxMs: 1_000 };
const half = () => 0.5;

describe('decideRetry', () => {
  it('sends 429, 502, 503 and 504 again, with full-jitter exponential backoff capped at maxMs', () => {
    for (const status of [429, 502, 503, 504])
      expect(decideRetry(1, { kind: 'answer', status }, policy, half)).toEqual({ retry: true, delayMs: 50 });
    const delays = [1, 2, 3, 4].map((attempt) => {
      const d = decideRetry(attempt, { kind: 'answer', status: 503 }, policy, half);
      return d.retry ? d.delayMs : -1;
    });
    expect(delays).toEqual([50, 100, 200, 400]);
    // The cap: 100 * 2^9 would be 51 200 ms.
    expect(backoffMs(10, policy, half)).toBe(500);
    // Full jitter: anywhere from 0 to just under the cap.
    expect(backoffMs(3, policy, () => 0)).toBe(0);
    expect(backoffMs(3, policy, () => 0.999)).toBe(399);
  });

  it('stops after the policy attempts (the first included), and never resends a 4xx or a 500', () => {
    expect(decideRetry(5, { kind: 'answer', status: 503 }, policy, half)).toEqual({ retry: false });
    expect(decideRetry(1, { kind: 'answer', status: 503 }, { ...policy, attempts: 1 }, half)).toEqual({
      retry: false,
    });
    for (const status of [200, 201, 400, 401, 403, 404, 409, 413, 500])
      expect(decideRetry(1, { kind: 'answer', status }, policy, half)).toEqual({ retry: false });
    expect(DEFAULT_RETRY.attempts).toBe(5);
  });

  it('waits at least the retry-after the API asked for, and gives up at once on one beyond MAX_RETRY_AFTER_MS', () => {
    expect(decideRetry(1, { kind: 'answer', status: 503, retryAfterMs: 2_000 }, policy, half)).toEqual({
      retry: true,
      delayMs: 2_000,
    });
    expect(decideRetry(4, { kind: 'answer', status: 429, retryAfterMs: 10 }, policy, half)).toEqual({
      retry: true,
      delayMs: 400,
    });
    expect(
      decideRetry(1, { kind: 'answer', status: 503, retryAfterMs: MAX_RETRY_AFTER_MS + 1 }, policy, half),
    ).toEqual({ retry: false });
  });

  it('sends network failures again, sent or not', () => {
    expect(decideRetry(2, { kind: 'network', failure: 'lost' }, policy, half)).toEqual({
      retry: true,
      delayMs: 100,
    });
    expect(decideRetry(2, { kind: 'network', failure: 'not-sent' }, policy, half).retry).toBe(true);
    expect(decideRetry(5, { kind: 'network', failure: 'lost' }, policy, half).retry).toBe(false);
  });
});

describe('networkFailureOf', () => {
  const fetchFailed = (cause: unknown) => new TypeError('fetch failed', { cause });
  it('tells a connection never made from one that broke after the request went out', () => {
    expect(networkFailureOf(fetchFailed(Object.assign(new Error('connect'), { code: 'ECONNREFUSED' })))).toBe(
      'not-sent',
    );
    const dualStack = new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })]);
    expect(networkFailureOf(fetchFailed(dualStack))).toBe('not-sent');
    expect(networkFailureOf(fetchFailed(Object.assign(new Error('dns'), { code: 'ENOTFOUND' })))).toBe(
      'not-sent',
    );
    expect(networkFailureOf(fetchFailed(Object.assign(new Error('reset'), { code: 'ECONNRESET' })))).toBe(
      'lost',
    );
    expect(
      networkFailureOf(
        new TypeError('terminated', {
          cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
        }),
      ),
    ).toBe('lost');
    expect(networkFailureOf(new RequestDeadlineError(30_000))).toBe('lost');
    // The caller's own abort is not a network failure: it is not retried.
    expect(networkFailureOf(new DOMException('stop', 'AbortError'))).toBeUndefined();
  });

  it('leaves programming errors and the caller abort alone', () => {
    expect(networkFailureOf(new TypeError('Cannot read properties of undefined'))).toBeUndefined();
    expect(networkFailureOf(new DOMException('aborted', 'AbortError'))).toBeUndefined();
    expect(networkFailureOf('nope')).toBeUndefined();
  });
});

describe('retryAfterMs', () => {
  it('reads delta-seconds and HTTP dates, and nothing else', () => {
    const now = Date.parse('2026-11-30T09:00:00Z');
    expect(retryAfterMs('1', now)).toBe(1_000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Mon, 30 Nov 2026 09:00:05 GMT', now)).toBe(5_000);
    expect(retryAfterMs('Mon, 30 Nov 2026 08:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
  });
});

describe('a repeat after a lost answer', () => {
  it('an enqueue answered "existing" under a key the client made is the one this call created', () => {
    expect(createdByThisCall('existing', true, true)).toBe(true);
    expect(createdByThisCall('existing', true, false)).toBe(false);
    // The caller's own key may be an earlier call's: existing stays existing.
    expect(createdByThisCall('existing', false, true)).toBe(false);
    expect(createdByThisCall('created', false, false)).toBe(true);
  });

  it('a cancel or retry refused 409 is taken as done only in the states the command leads to', () => {
    expect(commandMayHaveLanded('cancel', 'CANCELLED', true)).toBe(true);
    expect(commandMayHaveLanded('cancel', 'CANCEL_REQUESTED', true)).toBe(true);
    expect(commandMayHaveLanded('cancel', 'SUCCESS', true)).toBe(false);
    expect(commandMayHaveLanded('cancel', 'CANCELLED', false)).toBe(false);
    expect(commandMayHaveLanded('retry', 'QUEUED', true)).toBe(true);
    expect(commandMayHaveLanded('retry', 'RUNNING', true)).toBe(true);
    expect(commandMayHaveLanded('retry', 'FAILED', true)).toBe(false);
    expect(commandMayHaveLanded('retry', undefined, true)).toBe(false);
  });

  it('a DELETE that finds nothing after a lost answer deleted it', () => {
    expect(deletedByThisCall(404, true)).toBe(true);
    expect(deletedByThisCall(404, false)).toBe(false);
    expect(deletedByThisCall(403, true)).toBe(false);
  });
});

describe('the enqueue body', () => {
  it('rounds milliseconds up to whole seconds, writes dates in ISO-8601 and makes a key when none is given', () => {
    expect(wholeSecondsUp(1)).toBe(1);
    expect(wholeSecondsUp(1_000)).toBe(1);
    expect(wholeSecondsUp(1_001)).toBe(2);
    expect(Object.is(wholeSecondsUp(-200), 0)).toBe(true);
    const made = enqueueBodyOf(
      'demo.echo',
      { a: 1 },
      { delay: 1_500, timeout: 30_000, priority: 3, maxAttempts: 2 },
      () => 'key-1',
    );
    expect(made).toEqual({
      keyMadeByClient: true,
      body: {
        type: 'demo.echo',
        payload: { a: 1 },
        priority: 3,
        delaySeconds: 2,
        maxAttempts: 2,
        timeoutSeconds: 30,
        idempotencyKey: 'key-1',
      },
    });
    const given = enqueueBodyOf(
      'demo.echo',
      undefined,
      { runAt: new Date('2026-12-01T09:00:00Z'), idempotencyKey: 'mine' },
      () => 'unused',
    );
    expect(given).toEqual({
      keyMadeByClient: false,
      body: { type: 'demo.echo', runAt: '2026-12-01T09:00:00.000Z', idempotencyKey: 'mine' },
    });
  });
});

describe('chunksOf', () => {
  async function* items(sizes: number[]) {
    yield* sizes;
  }
  const collect = async (sizes: number[], limits: { maxTasks: number; maxBytes: number }) => {
    const out: number[][] = [];
    for await (const chunk of chunksOf(items(sizes), (n) => n, limits)) out.push(chunk);
    return out;
  };

  it('cuts at the task count and at the body size (envelope included), never leaving a chunk empty', async () => {
    expect(await collect([1, 1, 1, 1, 1], { maxTasks: 2, maxBytes: 1_000 })).toEqual([[1, 1], [1, 1], [1]]);
    // The envelope {"tasks":[]} is 12 bytes: 12 + 40 + 40 fits 100, a third does not.
    expect(await collect([40, 40, 40, 40], { maxTasks: 100, maxBytes: 100 })).toEqual([
      [40, 40],
      [40, 40],
    ]);
    // One too large for any chunk still goes alone (the sender fails it before sending).
    expect(await collect([200, 1], { maxTasks: 100, maxBytes: 100 })).toEqual([[200], [1]]);
    expect(await collect([], { maxTasks: 100, maxBytes: 100 })).toEqual([]);
  });
});

describe('problemOf', () => {
  it('keeps a problem+json as it is and makes one of API Gateway message or a bare status', () => {
    const own = {
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      code: 'TASK_NOT_FOUND',
      detail: 'No task x.',
    };
    expect(problemOf(404, own)).toEqual(own);
    expect(problemOf(429, { message: 'Too Many Requests' })).toMatchObject({
      code: 'THROTTLED',
      detail: 'Too Many Requests',
      status: 429,
    });
    expect(problemOf(403, { message: 'Forbidden' })).toMatchObject({ code: 'ACCESS_DENIED' });
    expect(problemOf(418, '<html>teapot</html>')).toMatchObject({
      code: 'HTTP_418',
      detail: '<html>teapot</html>',
    });
  });
});

/** A fetch that answers from a script, recording what it was sent. */
function scriptedFetch(script: (n: number) => Response | Error) {
  const sent: { url: string; method: string; headers: Record<string, string>; body: string | undefined }[] =
    [];
  const fetchFn = (async (url: URL, init: RequestInit) => {
    sent.push({
      url: String(url),
      method: init.method!,
      headers: init.headers as Record<string, string>,
      body: init.body as string | undefined,
    });
    const next = script(sent.length);
    if (next instanceof Error) throw next;
    return next;
  }) as unknown as typeof fetch;
  return { fetchFn, sent };
}

const problemAnswer = (status: number, code: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ type: 'about:blank', title: 't', status, code, detail: code }), {
    status,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });

function transportWith(fetchFn: typeof fetch, extra: Partial<TransportOptions> = {}) {
  const slept: number[] = [];
  let signs = 0;
  const transport = createTransport({
    baseUrl: new URL('http://api.test/prod/'),
    signer: async (_url, init) => ({ ...init.headers, authorization: `sig-${++signs}` }),
    owner: undefined,
    fetch: fetchFn,
    retry: policy,
    random: half,
    sleep: async (ms) => void slept.push(ms),
    clock: { now: () => Date.parse('2026-11-30T09:00:00Z') },
    requestTimeoutMs: 1_000,
    ...extra,
  });
  return { transport, slept };
}

describe('the transport', () => {
  it('resends a throttled request signed afresh each time with the same body, honouring retry-after', async () => {
    const { fetchFn, sent } = scriptedFetch((n) =>
      n === 1
        ? problemAnswer(503, 'THROTTLED', { 'retry-after': '1' })
        : n === 2
          ? new Response('{"message":"Too Many Requests"}', { status: 429 })
          : new Response('{"ok":true}', { status: 201 }),
    );
    const { transport, slept } = transportWith(fetchFn);
    const answer = await transport({
      method: 'POST',
      route: 'POST /tasks',
      path: 'tasks',
      body: { k: 'key-1' },
    });
    expect(answer).toMatchObject({
      status: 201,
      body: { ok: true },
      attempts: 3,
      earlierAttemptMayHaveLanded: false,
    });
    expect(sent.map((s) => s.url)).toEqual(Array(3).fill('http://api.test/prod/tasks'));
    expect(sent.map((s) => s.headers.authorization)).toEqual(['sig-1', 'sig-2', 'sig-3']);
    expect(new Set(sent.map((s) => s.body))).toEqual(new Set(['{"k":"key-1"}']));
    expect(slept).toEqual([1_000, 100]);
  });

  it('marks an answer that follows a lost one, and returns the last throttled answer when the attempts run out', async () => {
    const reset = () =>
      new TypeError('fetch failed', { cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }) });
    const lost = scriptedFetch((n) => (n === 1 ? reset() : new Response('{}', { status: 200 })));
    expect(
      await transportWith(lost.fetchFn).transport({ method: 'POST', route: 'r', path: 'tasks', body: {} }),
    ).toMatchObject({ status: 200, earlierAttemptMayHaveLanded: true });

    const busy = scriptedFetch(() => problemAnswer(503, 'THROTTLED'));
    const { transport, slept } = transportWith(busy.fetchFn);
    expect(await transport({ method: 'GET', route: 'r', path: 'tasks' })).toMatchObject({
      status: 503,
      attempts: 5,
      body: { code: 'THROTTLED' },
    });
    expect(slept).toEqual([50, 100, 200, 400]);
  });

  it('throws UnreachableError after the attempts when the API cannot be reached, and the abort reason at once', async () => {
    const refused = () =>
      new TypeError('fetch failed', {
        cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      });
    const down = scriptedFetch(refused);
    const error = await transportWith(down.fetchFn)
      .transport({ method: 'GET', route: 'r', path: 'health' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnreachableError);
    expect((error as Error).message).toMatch(
      /cannot reach the Leasehold API at http:\/\/api\.test\/prod\/ \(connect ECONNREFUSED\) after 5 attempts/,
    );
    expect(down.sent).toHaveLength(5);

    const stop = new AbortController();
    const aborting = scriptedFetch(() => {
      stop.abort(new Error('stopped by the caller'));
      return refused();
    });
    await expect(
      transportWith(aborting.fetchFn).transport({
        method: 'GET',
        route: 'r',
        path: 'health',
        signal: stop.signal,
      }),
    ).rejects.toThrow('stopped by the caller');
    expect(aborting.sent).toHaveLength(1);
  });
});

describe('waitFor polling', () => {
  const task = (status: string) => ({ id: 't1', status }) as unknown as ClientTask;

  it('reads less and less often, up to every 5 s', () => {
    const seen = [250];
    while (seen.at(-1)! < 5_000) seen.push(nextInterval(seen.at(-1)!));
    expect(seen).toEqual([250, 375, 563, 845, 1268, 1902, 2853, 4280, 5000]);
    expect(nextInterval(5_000)).toBe(5_000);
  });

  it('resolves with the finished task, and times out with the task as last read', async () => {
    let now = 0;
    const slept: number[] = [];
    const deps = {
      clock: { now: () => now },
      sleep: async (ms: number) => void (slept.push(ms), (now += ms)),
    };
    const statuses = ['QUEUED', 'RUNNING', 'SUCCESS'];
    const done = await waitForTask('t1', async () => task(statuses.shift()!), { interval: 100 }, deps);
    expect(done.status).toBe('SUCCESS');
    expect(slept).toEqual([100, 150]);

    slept.length = 0;
    const error = await waitForTask(
      't1',
      async () => task('RUNNING'),
      { interval: 100, timeout: 300 },
      deps,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(error).toMatchObject({ taskId: 't1', task: { status: 'RUNNING' }, code: 'WAIT_TIMEOUT' });
    expect(slept).toEqual([100, 150, 50]);
  });
});
