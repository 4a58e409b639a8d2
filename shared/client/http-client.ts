/**
 * `createClient`: the typed client of the HTTP API (`leasehold/client`). Against the deployed API it
 * signs with SigV4 (service execute-api, the region from the URL, the SDK's default credential chain
 * unless credentials are given); against the sim, with the sim caller's keys and region given; against
 * the local stack (no region) it does not sign, and sends `owner` as X-Leasehold-Owner.
 *
 * Every answer is read through the API's own zod schemas (api/response-schemas.ts); problems become
 * the typed errors of errors.ts. Throttling, brief unavailability and lost answers are retried
 * (retry-policy.ts), and every request is safe to repeat (lost-answers.ts).
 */
import { randomUUID } from 'node:crypto';
import type * as z from 'zod';
import { flowAnswerSchema, taskAnswerSchema, taskPageSchema } from '../api/response-schemas.js';
import { systemClock, type Clock } from '../clock.js';
import { mathRandom, type IdGenerator, type RandomSource } from '../ids.js';
import type { TaskDefinition } from '../tasks/define.js';
import { answerError, clientTask, decodeAnswer } from './answers.js';
import type {
  ClientTask,
  EnqueueFlowResult,
  EnqueueOptions,
  EnqueueResult,
  Flow,
  LeaseholdClient,
  ListFilter,
  TaskId,
} from './client-types.js';
import { enqueueBodyOf } from './enqueue-body.js';
import { enqueueMany } from './enqueue-many.js';
import { ClientOptionsError } from './errors.js';
import { createTransport, type Sleep, type Transport } from './http-transport.js';
import { commandMayHaveLanded, createdByThisCall, STATUSES_AFTER } from './lost-answers.js';
import { eachItemOfPages } from './pages.js';
import { DEFAULT_RETRY, type RetryPolicy } from './retry-policy.js';
import { scheduleCalls } from './schedule-calls.js';
import { typeCalls } from './type-calls.js';
import { regionOfApiUrl, sigv4Signer, type Credentials } from './sigv4.js';
import { timerSleep } from './sleep.js';
import { waitForTask } from './wait-for.js';

/** API Gateway gives up on an integration after 30 s: an attempt still unanswered later is lost. */
const DEFAULT_REQUEST_TIMEOUT_MS = 35_000;

export interface ClientOptions {
  /**
   * The API: the deployed `https://<id>.execute-api.<region>.amazonaws.com` (a stage path is kept),
   * the sim's API URL, or the local stack's `http://127.0.0.1:3000`.
   */
  url: string | URL;
  /** The region to sign for; default: the execute-api URL's. Without one (the local stack) nothing is signed. */
  region?: string;
  /** Default: the AWS SDK's default credential chain (environment, profile, SSO, role). */
  credentials?: Credentials;
  /** The local stack's caller, sent as X-Leasehold-Owner (development only: AWS takes the caller from IAM). */
  owner?: string;
  fetch?: typeof fetch;
  /** Attempts in all (default 5) and the backoff's bounds (200 ms doubling up to 5 s, fully jittered). */
  retry?: Partial<RetryPolicy>;
  random?: RandomSource;
  sleep?: Sleep;
  clock?: Clock;
  /** Makes the idempotency key of an enqueue the caller gave none for (default crypto.randomUUID). */
  newIdempotencyKey?: IdGenerator;
  /** One attempt's limit in milliseconds (default 35 s): later, its answer counts as lost. */
  requestTimeoutMs?: number;
}

export function createClient(options: ClientOptions): LeaseholdClient {
  const baseUrl = new URL(String(options.url));
  if (!baseUrl.pathname.endsWith('/')) baseUrl.pathname += '/';
  const region = options.region ?? regionOfApiUrl(baseUrl);
  if (!region && options.credentials)
    throw new ClientOptionsError(
      `credentials were given for ${baseUrl.href}, but no region to sign for: pass \`region\` (the sim's region for the sim).`,
    );
  const retry = { ...DEFAULT_RETRY, ...options.retry };
  if (!Number.isInteger(retry.attempts) || retry.attempts < 1)
    throw new ClientOptionsError(
      `retry.attempts must be a whole number of at least 1 (got ${retry.attempts}).`,
    );
  const random = options.random ?? mathRandom;
  const sleep = options.sleep ?? timerSleep;
  const clock = options.clock ?? systemClock();
  const newKey = options.newIdempotencyKey ?? (() => randomUUID());
  const transport: Transport = createTransport({
    baseUrl,
    signer: region ? sigv4Signer(region, options.credentials) : undefined,
    owner: options.owner,
    fetch: options.fetch ?? globalThis.fetch,
    retry,
    random,
    sleep,
    clock,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
  });
  const taskPath = (id: string, rest = '') => `tasks/${encodeURIComponent(id)}${rest}`;

  async function enqueue<S extends z.ZodType, R>(
    definition: TaskDefinition<S, R>,
    payload: z.input<S>,
    options?: EnqueueOptions,
  ): Promise<EnqueueResult<z.input<S>, Awaited<R>>>;
  async function enqueue(type: string, payload?: unknown, options?: EnqueueOptions): Promise<EnqueueResult>;
  async function enqueue(
    target: string | { name: string },
    payload?: unknown,
    enqueueOptions?: EnqueueOptions,
  ): Promise<EnqueueResult> {
    const route = 'POST /tasks';
    const type = typeof target === 'string' ? target : target.name;
    const { body, keyMadeByClient } = enqueueBodyOf(type, payload, enqueueOptions, newKey);
    const answer = await transport({ method: 'POST', route, path: 'tasks', body });
    const { task, joined } = decodeAnswer(answer, taskAnswerSchema, route);
    return {
      task: clientTask(task),
      ...(joined ? { joined } : {}),
      created: createdByThisCall(
        answer.status === 201 ? 'created' : 'existing',
        keyMadeByClient,
        answer.earlierAttemptMayHaveLanded,
      ),
    };
  }

  /** As an enqueue: with a key of the client's own when the flow has none, so a resend cannot make it twice. */
  async function enqueueFlow<P, R>(flow: Flow<P, R>): Promise<EnqueueFlowResult<P, R>> {
    const route = 'POST /flows';
    const keyMadeByClient = flow.idempotencyKey === undefined;
    const body = { ...flow, idempotencyKey: flow.idempotencyKey ?? newKey() };
    const answer = await transport({ method: 'POST', route, path: 'flows', body });
    const { id, ids, task } = decodeAnswer(answer, flowAnswerSchema, route);
    return {
      id: id as TaskId<P, R>,
      ids,
      task: clientTask<P, R>(task),
      created: createdByThisCall(
        answer.status === 201 ? 'created' : 'existing',
        keyMadeByClient,
        answer.earlierAttemptMayHaveLanded,
      ),
    };
  }

  async function get<P, R>(id: TaskId<P, R>, signal?: AbortSignal): Promise<ClientTask<P, R>> {
    const route = 'GET /tasks/{id}';
    const answer = await transport({ method: 'GET', route, path: taskPath(id), signal });
    return clientTask<P, R>(decodeAnswer(answer, taskAnswerSchema, route).task);
  }

  function list(filter: ListFilter = {}): AsyncIterable<ClientTask> {
    const route = 'GET /tasks';
    return eachItemOfPages(async (cursor) => {
      const answer = await transport({
        method: 'GET',
        route,
        path: 'tasks',
        query: { status: filter.status, type: filter.type, limit: filter.pageSize, cursor },
      });
      const page = decodeAnswer(answer, taskPageSchema, route);
      return { items: page.tasks.map((t) => clientTask(t)), nextCursor: page.nextCursor };
    });
  }

  /**
   * Cancel and retry are sent again like the rest; a repeat refused 409 after a lost answer is read
   * back, and answered with the task if it is where the command leads (the lost attempt did it).
   */
  async function command<P, R>(id: TaskId<P, R>, name: 'cancel' | 'retry'): Promise<ClientTask<P, R>> {
    const route = `POST /tasks/{id}/${name}`;
    const answer = await transport({ method: 'POST', route, path: taskPath(id, `/${name}`) });
    if (answer.status === 409) {
      const error = answerError(answer);
      if (
        error.code === 'TASK_STATE_CONFLICT' &&
        commandMayHaveLanded(name, error.taskStatus, answer.earlierAttemptMayHaveLanded)
      ) {
        const task = await get(id);
        if ((STATUSES_AFTER[name] as readonly string[]).includes(task.status)) return task;
      }
      throw error;
    }
    return clientTask<P, R>(decodeAnswer(answer, taskAnswerSchema, route).task);
  }

  return {
    enqueue,
    enqueueMany: (tasks, manyOptions = {}) =>
      enqueueMany(tasks, manyOptions, { transport, newKey, retry, random, sleep }),
    enqueueFlow,
    get: (id) => get(id),
    list,
    cancel: (id) => command(id, 'cancel'),
    retry: (id) => command(id, 'retry'),
    waitFor: (id, waitOptions = {}) =>
      waitForTask(id, (signal) => get(id, signal), waitOptions, { sleep, clock }),
    schedules: scheduleCalls(transport),
    types: typeCalls(transport),
  };
}
