/**
 * Checks recorded exchanges (one request and its answer) against the OpenAPI document with ajv (JSON
 * Schema 2020-12): the answer against what the document says the operation answers with that status
 * and content type, and, when the answer is 2xx, the request against what the operation takes (an
 * invalid request must never be accepted). A request no operation takes must be the function's 404 or
 * 405. Schemas are looked up in the document itself, by JSON pointer, so its $refs resolve as written.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { OpenApiDocument, OpenApiOperation } from '../../shared/api/openapi.js';

export interface Exchange {
  method: string;
  /** As the API routes it: without a named stage's prefix, not decoded. */
  path: string;
  query?: Record<string, string> | undefined;
  requestContentType?: string | undefined;
  /** The body as sent, as text (decoded from base64 if it was). */
  requestBody?: string | undefined;
  status: number;
  responseHeaders: Record<string, string>;
  responseBody: string;
}

export interface CheckResult {
  /** The operation the request went to; undefined when no documented operation takes it. */
  operationId: string | undefined;
  mismatches: string[];
}

/** The exchange of an API Gateway (payload 2.0) event and the function's answer to it. */
export function exchangeOf(
  event: Pick<
    APIGatewayProxyEventV2,
    'rawPath' | 'headers' | 'body' | 'isBase64Encoded' | 'queryStringParameters' | 'requestContext'
  >,
  response: { statusCode: number; headers?: Record<string, unknown>; body?: string },
): Exchange {
  const stage = event.requestContext.stage;
  const prefix = stage && stage !== '$default' ? `/${stage}` : '';
  const path =
    prefix && event.rawPath.startsWith(prefix) ? event.rawPath.slice(prefix.length) || '/' : event.rawPath;
  const header = (name: string) =>
    Object.entries(event.headers ?? {}).find(([k]) => k.toLowerCase() === name)?.[1];
  return {
    method: event.requestContext.http.method,
    path,
    query: event.queryStringParameters as Record<string, string> | undefined,
    requestContentType: header('content-type'),
    requestBody:
      event.body === undefined
        ? undefined
        : event.isBase64Encoded
          ? Buffer.from(event.body, 'base64').toString('utf8')
          : event.body,
    status: response.statusCode,
    responseHeaders: Object.fromEntries(
      Object.entries(response.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]),
    ),
    responseBody: response.body ?? '',
  };
}

const DOCUMENT_ID = 'urn:leasehold:openapi';
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

interface Template {
  path: string;
  pattern: RegExp;
  /** Concrete segments first: /tasks/batch before /tasks/{id}, as OpenAPI matches them. */
  parameterCount: number;
  operations: Record<string, OpenApiOperation>;
}

/** Items of a request body that the operation answers one by one (200 overall, each bad item failed). */
const ITEMWISE: Record<string, { items: string; results: string }> = {
  enqueueBatch: { items: 'tasks', results: 'results' },
};

export class OpenApiConformance {
  /** operationIds of the exchanges checked so far. */
  readonly seen = new Set<string>();
  private readonly templates: Template[];
  private readonly exact: Ajv2020;
  private readonly coercing: Ajv2020;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(document: OpenApiDocument) {
    this.templates = Object.entries(document.paths)
      .map(([path, item]) => ({
        path,
        pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '([^/]+)')}$`),
        parameterCount: (path.match(/\{/g) ?? []).length,
        operations: Object.fromEntries(Object.entries(item).filter(([m]) => METHODS.includes(m))),
      }))
      .sort((a, b) => a.parameterCount - b.parameterCount);
    // strict: false because the document is added whole: its OpenAPI members are no JSON Schema keywords.
    // Schemas are then compiled as $refs into it, by JSON pointer, so its own $refs resolve as written.
    const ajv = (coerceTypes: boolean) => {
      const instance = new Ajv2020({ strict: false, allErrors: true, coerceTypes });
      addFormats.default(instance);
      instance.addSchema(document, DOCUMENT_ID);
      return instance;
    };
    this.exact = ajv(false);
    this.coercing = ajv(true);
  }

  /** Every operationId the document has. */
  operationIds(): string[] {
    return this.templates.flatMap((t) => Object.values(t.operations).map((o) => o.operationId));
  }

  /** Throws, naming each mismatch, unless the exchange is what the document says. */
  assertConforms(exchange: Exchange): void {
    const { mismatches } = this.check(exchange);
    if (mismatches.length)
      throw new Error(
        `${exchange.method} ${exchange.path} answered ${exchange.status} does not conform to the OpenAPI ` +
          `document:\n  - ${mismatches.join('\n  - ')}\nAnswer: ${exchange.responseBody.slice(0, 500)}`,
      );
  }

  check(exchange: Exchange): CheckResult {
    const method = exchange.method.toLowerCase();
    const candidates = this.templates
      .map((t) => ({ t, match: t.pattern.exec(exchange.path) }))
      .filter((c) => c.match);
    const found = candidates.find((c) => c.t.operations[method]);
    if (!found) return { operationId: undefined, mismatches: this.checkUnrouted(exchange, candidates) };
    const { t: template, match } = found;
    const operation = template.operations[method]!;
    this.seen.add(operation.operationId);
    const at = ['paths', template.path, method];
    const mismatches = this.checkAnswer(exchange, operation, at);
    if (exchange.status >= 200 && exchange.status < 300)
      mismatches.push(...this.checkRequest(exchange, operation, at, match!.slice(1)));
    return { operationId: operation.operationId, mismatches };
  }

  /** No operation takes it: the function's 404 (no such path) or 405 with the documented methods in Allow. */
  private checkUnrouted(exchange: Exchange, candidates: { t: Template }[]): string[] {
    const methods = new Set(
      candidates.flatMap((c) => Object.keys(c.t.operations).map((m) => m.toUpperCase())),
    );
    const expected = methods.size ? 405 : 404;
    const mismatches: string[] = [];
    if (exchange.status !== expected)
      mismatches.push(
        methods.size
          ? `no documented ${exchange.method} on this path (only ${[...methods].join(', ')}): expected 405`
          : 'no documented path matches: expected 404',
      );
    if (expected === 405) {
      const allow = (exchange.responseHeaders['allow'] ?? '').split(',').map((m) => m.trim());
      if ([...methods].sort().join() !== [...allow].sort().join())
        mismatches.push(
          `Allow is "${exchange.responseHeaders['allow']}", the document has ${[...methods].join(', ')}`,
        );
    }
    if (mediaType(exchange.responseHeaders['content-type']) !== 'application/problem+json')
      mismatches.push(
        `content-type ${exchange.responseHeaders['content-type']}, expected application/problem+json`,
      );
    else
      mismatches.push(
        ...this.textErrors(['components', 'schemas', 'Problem'], exchange.responseBody, 'answer'),
      );
    return mismatches;
  }

  private checkAnswer(exchange: Exchange, operation: OpenApiOperation, at: string[]): string[] {
    const response = operation.responses[String(exchange.status)];
    if (!response)
      return [
        `${operation.operationId} documents no ${exchange.status} (it documents ${Object.keys(operation.responses).join(', ')})`,
      ];
    const mismatches: string[] = [];
    for (const [name, header] of Object.entries(response.headers ?? {}))
      if (header.required && exchange.responseHeaders[name.toLowerCase()] === undefined)
        mismatches.push(`the ${exchange.status} answer lacks the header ${name}`);
    const contentTypes = Object.keys(response.content ?? {});
    if (!contentTypes.length) {
      if (exchange.responseBody !== '')
        mismatches.push(`the ${exchange.status} answer has a body; the document has none`);
      return mismatches;
    }
    const contentType = mediaType(exchange.responseHeaders['content-type']);
    if (!contentType || !contentTypes.includes(contentType))
      return [
        ...mismatches,
        `content-type ${contentType} of the ${exchange.status} answer is not documented (${contentTypes.join(', ')})`,
      ];
    const schema = [...at, 'responses', String(exchange.status), 'content', contentType, 'schema'];
    return [...mismatches, ...this.textErrors(schema, exchange.responseBody, 'answer')];
  }

  /** A 2xx answer accepted the request: it must be one the document takes. */
  private checkRequest(
    exchange: Exchange,
    operation: OpenApiOperation,
    at: string[],
    values: string[],
  ): string[] {
    const mismatches: string[] = [];
    const parameters = operation.parameters ?? [];
    const pathIndexes = parameters.flatMap((p, i) => (p.in === 'path' ? [i] : []));
    pathIndexes.forEach((index, n) =>
      mismatches.push(
        ...this.schemaErrors(
          [...at, 'parameters', String(index), 'schema'],
          decode(values[n]!),
          `path {${parameters[index]!.name}}`,
          true,
        ),
      ),
    );
    const query = exchange.query ?? {};
    const queryIndexes = parameters.flatMap((p, i) => (p.in === 'query' ? [i] : []));
    for (const name of Object.keys(query))
      if (!queryIndexes.some((i) => parameters[i]!.name === name))
        mismatches.push(`query ${name} is not documented`);
    for (const index of queryIndexes) {
      const { name, required } = parameters[index]!;
      if (query[name] === undefined) {
        if (required) mismatches.push(`query ${name} is required`);
      } else
        mismatches.push(
          ...this.schemaErrors(
            [...at, 'parameters', String(index), 'schema'],
            query[name],
            `query ${name}`,
            true,
          ),
        );
    }
    if (operation.requestBody) mismatches.push(...this.checkRequestBody(exchange, operation, at));
    return mismatches;
  }

  private checkRequestBody(exchange: Exchange, operation: OpenApiOperation, at: string[]): string[] {
    const contentTypes = Object.keys(operation.requestBody!.content);
    const sent = mediaType(exchange.requestContentType);
    // The API reads any JSON media type (RFC 6839's +json suffix too); the document names application/json.
    const contentType = contentTypes.find(
      (t) => t === sent || (t === 'application/json' && /^application\/[\w.-]+\+json$/.test(sent ?? '')),
    );
    if (!contentType) return [`request content-type ${sent} is not documented (${contentTypes.join(', ')})`];
    const schema = [...at, 'requestBody', 'content', contentType, 'schema'];
    const itemwise = ITEMWISE[operation.operationId];
    if (!itemwise) return this.textErrors(schema, exchange.requestBody ?? '', 'request body');
    // Such an operation is 2xx whatever its items: each item outside the schema must be answered failed, with a 4xx.
    const validate = this.validator(schema);
    const body = parseJson(exchange.requestBody ?? '');
    if (body.error) return [`request body: ${body.error}`];
    if (validate(body.value)) return [];
    const results = (
      parseJson(exchange.responseBody).value as Record<string, { outcome?: string; status?: number }[]>
    )?.[itemwise.results];
    return (validate.errors ?? []).flatMap((error) => {
      const item = new RegExp(`^/${itemwise.items}/(\\d+)(/|$)`).exec(error.instancePath);
      const result = item ? results?.[Number(item[1])] : undefined;
      if (result?.outcome === 'failed' && (result.status ?? 0) >= 400 && (result.status ?? 0) < 500)
        return [];
      return [
        `request body${error.instancePath} ${error.message} (${JSON.stringify(error.params)})${item ? ', yet its item was not answered failed with a 4xx' : ''}`,
      ];
    });
  }

  /** Errors of a JSON text against the schema at `pointer` in the document. */
  private textErrors(pointer: string[], text: string, what: string): string[] {
    const parsed = parseJson(text);
    if (parsed.error) return [`${what}: ${parsed.error}`];
    return this.schemaErrors(pointer, parsed.value, what);
  }

  /** `coerce`: a path or query value, text that the document describes parsed (limit is an integer). */
  private schemaErrors(pointer: string[], value: unknown, what: string, coerce = false): string[] {
    const validate = this.validator(pointer, coerce);
    // Coercion writes into the value's parent: a coerced value is checked inside a holder object.
    if (coerce ? validate({ value }) : validate(value)) return [];
    return (validate.errors ?? []).map(
      (e) =>
        `${what}${e.instancePath.replace(/^\/value/, '')} ${e.message} (${JSON.stringify(e.params)}) [${pointer.join(' > ')}]`,
    );
  }

  private validator(pointer: string[], coerce = false): ValidateFunction {
    const fragment = pointer.map((p) => `/${encodeURIComponent(p.replace(/~/g, '~0').replace(/\//g, '~1'))}`);
    const ref = `${DOCUMENT_ID}#${fragment.join('')}`;
    const key = `${coerce}:${ref}`;
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = coerce
        ? this.coercing.compile({ type: 'object', properties: { value: { $ref: ref } }, required: ['value'] })
        : this.exact.compile({ $ref: ref });
      this.compiled.set(key, validate);
    }
    return validate;
  }
}

function mediaType(contentType: string | undefined): string | undefined {
  return contentType?.split(';')[0]!.trim().toLowerCase() || undefined;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function parseJson(
  text: string,
): { value: unknown; error?: undefined } | { value?: undefined; error: string } {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (error) {
    return { error: `not JSON (${(error as Error).message})` };
  }
}
