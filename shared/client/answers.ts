/**
 * Reading the API's answers: a 2xx body through the route's zod schema, anything else into the typed
 * error of its status with the problem's fields. API Gateway answers some requests itself with
 * `{"message": ...}` (403 bad signature, 404 no route, 413, 429): those become problems too, with a
 * code of our own, so a caller handles one kind of error whoever answered.
 */
import type * as z from 'zod';
import { gatewayMessageSchema, problemSchema, type Problem, type TaskJson } from '../api/response-schemas.js';
import type { ClientTask } from './client-types.js';
import { problemError, UnexpectedAnswerError, type ApiProblemError } from './errors.js';
import type { ApiAnswer } from './http-transport.js';

/** The codes given to API Gateway's own answers: the API's own code where it has one for the same thing. */
const GATEWAY_CODES: Record<number, string> = {
  401: 'ACCESS_DENIED',
  403: 'ACCESS_DENIED',
  404: 'ROUTE_NOT_FOUND',
  413: 'BODY_TOO_LARGE',
  429: 'THROTTLED',
  500: 'INTERNAL_ERROR',
  502: 'BAD_GATEWAY',
  503: 'SERVICE_UNAVAILABLE',
  504: 'GATEWAY_TIMEOUT',
};

/** The answer's body if it is a 2xx that fits `schema`; the answer's error otherwise. */
export function decodeAnswer<S extends z.ZodType>(answer: ApiAnswer, schema: S, route: string): z.output<S> {
  if (answer.status < 200 || answer.status > 299) throw answerError(answer);
  const parsed = schema.safeParse(answer.body);
  if (parsed.success) return parsed.data;
  throw new UnexpectedAnswerError(
    route,
    answer.status,
    parsed.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.length ? i.path.map(String).join('.') : 'body'}: ${i.message}`),
  );
}

/** The typed error for a non-2xx answer, with the problem's fields and the retry-after it asked for. */
export function answerError(answer: ApiAnswer): ApiProblemError {
  return problemError(answer.status, problemOf(answer.status, answer.body), answer.retryAfterSeconds);
}

/** The answer's problem: its own problem+json, or one made from API Gateway's message or the bare status. */
export function problemOf(status: number, body: unknown): Problem {
  const own = problemSchema.safeParse(body);
  if (own.success) return own.data;
  const gateway = gatewayMessageSchema.safeParse(body);
  const detail = gateway.success
    ? gateway.data.message
    : typeof body === 'string' && body.trim()
      ? body.trim().slice(0, 200)
      : `HTTP ${status}`;
  return {
    type: 'about:blank',
    title: gateway.success ? gateway.data.message : `HTTP ${status}`,
    status,
    code: GATEWAY_CODES[status] ?? `HTTP_${status}`,
    detail,
  };
}

/** A task as answered, typed by the caller's task types (the same JSON at run time). */
export function clientTask<P = unknown, R = unknown>(task: TaskJson): ClientTask<P, R> {
  return task as ClientTask<P, R>;
}
