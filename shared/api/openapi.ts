/**
 * The OpenAPI 3.1 document of the HTTP API, generated: the schemas are zod 4's JSON Schema of the very
 * zod schemas the API validates requests with and builds answers to, the words are openapi-operations.ts.
 * GET /openapi.json serves it; `npm run openapi` writes it to docs/openapi.json. Built on first use and
 * kept, from zod alone (no OpenAPI library). The API Lambda serves the generated file (openapi-file.ts).
 */
import * as z from 'zod';
import { LeaseholdError } from '../errors.js';
import type { TaskDefinition } from '../tasks/define.js';
import {
  ANSWER_COMPONENTS,
  OPERATIONS,
  PATH_PARAMETERS,
  REQUEST_COMPONENTS,
  type OperationSpec,
} from './openapi-operations.js';

type Json = Record<string, unknown>;

export interface OpenApiOperation extends Json {
  operationId: string;
  parameters?: (Json & { name: string; in: 'path' | 'query'; required?: boolean; schema: Json })[];
  requestBody?: Json & { content: Record<string, { schema: Json }> };
  responses: Record<
    string,
    Json & {
      headers?: Record<string, Json & { required?: boolean }>;
      content?: Record<string, { schema: Json }>;
    }
  >;
}

export interface OpenApiDocument extends Json {
  openapi: '3.1.0';
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: Json & { schemas: Record<string, Json> };
}

export interface ApiRoute {
  method: string;
  path: string;
}

/** The routes and the operations described for them disagree, or a schema cannot be a component: a bug, fixed in code. */
export class OpenApiDocumentError extends LeaseholdError {
  override name = 'OpenApiDocumentError';
  override readonly code = 'OPENAPI_DOCUMENT_INVALID';
  override readonly status = 500;
}

/** The version of the HTTP contract (not of the package): raise it when an answer or a request changes. */
const API_VERSION = '1.0.0';
const SECURITY_SCHEME = 'sigv4';

/** One entry of `x-leasehold-task-types`: what a form needs to enqueue a task of the type. */
export interface TaskTypeDescription {
  type: string;
  /** JSON Schema (draft 2020-12) of the payload as POST /tasks takes it; `{}` where zod cannot say. */
  payloadSchema: Json;
  maxAttempts?: number;
  timeoutMs?: number;
}

/** The task types: the name of the document's root extension (OpenAPI allows any `x-` member there). */
export const TASK_TYPES_EXTENSION = 'x-leasehold-task-types';

/** Built documents, per routes and per task definitions (NO_DEFINITIONS standing for none given). */
const built = new WeakMap<readonly ApiRoute[], WeakMap<readonly TaskTypeSource[], OpenApiDocument>>();
const NO_DEFINITIONS: readonly TaskTypeSource[] = [];

/** What the document says of a task definition (tasks/define.ts). */
export type TaskTypeSource = Pick<TaskDefinition, 'name' | 'schema' | 'maxAttempts' | 'timeoutMs'>;

/**
 * The document for these routes, and with `definitions` (the task catalog) their payload schemas in
 * `x-leasehold-task-types`, in catalog order. Throws if a route has no entry in OPERATIONS or an entry
 * is no route.
 */
export function openApiDocument(
  routes: readonly ApiRoute[],
  definitions?: readonly TaskTypeSource[],
): OpenApiDocument {
  let byDefinitions = built.get(routes);
  if (!byDefinitions) built.set(routes, (byDefinitions = new WeakMap()));
  let document = byDefinitions.get(definitions ?? NO_DEFINITIONS);
  if (!document) {
    document = {
      ...buildDocument(routes),
      ...(definitions ? { [TASK_TYPES_EXTENSION]: definitions.map(taskTypeDescription) } : {}),
    };
    byDefinitions.set(definitions ?? NO_DEFINITIONS, document);
  }
  return document;
}

function taskTypeDescription(definition: TaskTypeSource): TaskTypeDescription {
  return {
    type: definition.name,
    payloadSchema: inlineSchema(definition.schema, 'input', 'any'),
    ...(definition.maxAttempts === undefined ? {} : { maxAttempts: definition.maxAttempts }),
    ...(definition.timeoutMs === undefined ? {} : { timeoutMs: definition.timeoutMs }),
  };
}

const componentRef = (id: string) => `#/components/schemas/${id}`;
const ref = (id: string) => ({ $ref: componentRef(id) });

function buildDocument(routes: readonly ApiRoute[]): OpenApiDocument {
  const keys = routes.map((r) => `${r.method.toUpperCase()} ${r.path}`);
  const undescribed = keys.filter((k) => !(k in OPERATIONS));
  const notRoutes = Object.keys(OPERATIONS).filter((k) => !keys.includes(k));
  if (undescribed.length || notRoutes.length)
    throw new OpenApiDocumentError(
      'The OpenAPI document and the routes disagree. ' +
        (undescribed.length
          ? `Describe in shared/api/openapi-operations.ts: ${undescribed.join(', ')}. `
          : '') +
        (notRoutes.length ? `Described there but no route of the API: ${notRoutes.join(', ')}.` : ''),
    );

  const paths: OpenApiDocument['paths'] = {};
  for (const key of keys) {
    const [method, path] = splitKey(key);
    (paths[path] ??= {})[method.toLowerCase()] = operation(path, OPERATIONS[key]!);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Leasehold',
      version: API_VERSION,
      description:
        'A durable task queue on DynamoDB and Lambda. Every route uses IAM authorization: sign requests ' +
        'with SigV4 for the service `execute-api`. The caller (the IAM principal; an assumed-role session ' +
        'counts as its role) owns what it creates and sees nothing else. Errors are RFC 9457 ' +
        'application/problem+json from the function, or `{"message"}` as application/json from API ' +
        'Gateway itself (403 signature or permission, 404 for a path no route has, 413, 429, 500, 503).',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [
      {
        url: 'https://{apiId}.execute-api.{region}.amazonaws.com',
        description: 'The deployed HTTP API (its $default stage).',
        variables: {
          apiId: { default: 'abc123', description: 'The HTTP API id (the stack output).' },
          region: { default: 'eu-west-1', description: 'The stack’s AWS region.' },
        },
      },
      { url: 'http://127.0.0.1:3000', description: 'The local stack (`npm start`).' },
    ],
    security: [{ [SECURITY_SCHEME]: [] }],
    tags: [
      { name: 'tasks', description: 'Enqueue, read, list, cancel and retry tasks.' },
      { name: 'types', description: 'Task types: pause and resume (an operator’s routes), and counts.' },
      { name: 'schedules', description: 'Recurring and one-time schedules that enqueue tasks.' },
      { name: 'service', description: 'Health and this document.' },
    ],
    paths,
    components: {
      schemas: {
        ...componentSchemas(REQUEST_COMPONENTS, 'input'),
        ...componentSchemas(ANSWER_COMPONENTS, 'output'),
      },
      securitySchemes: {
        [SECURITY_SCHEME]: {
          type: 'apiKey',
          name: 'Authorization',
          in: 'header',
          description:
            'AWS Signature Version 4 for the service `execute-api` (IAM authorization): the Authorization ' +
            'header, with X-Amz-Date and, for temporary credentials, X-Amz-Security-Token. The principal ' +
            'needs `execute-api:Invoke` on the route.',
          'x-amazon-apigateway-authtype': 'awsSigv4',
        },
      },
    },
  };
}

function splitKey(key: string): [string, string] {
  const space = key.indexOf(' ');
  return [key.slice(0, space), key.slice(space + 1)];
}

/**
 * JSON Schema of each zod schema, as components that $ref each other. Requests are described as the API
 * reads them (io 'input': defaults optional), answers as it builds them (io 'output').
 */
function componentSchemas(
  components: Record<string, z.ZodType>,
  io: 'input' | 'output',
): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(components)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io,
    uri: componentRef,
    override: ({ zodSchema, jsonSchema }) => {
      // The batch envelope takes any items so each is refused on its own; each is an EnqueueRequest.
      if (zodSchema === REQUEST_COMPONENTS.BatchRequest.shape.tasks) jsonSchema.items = ref('EnqueueRequest');
    },
  });
  // zod puts a schema that two components share and that is no component itself under __shared.
  if ('__shared' in schemas)
    throw new OpenApiDocumentError(
      `Give these schemas a component id: ${Object.keys(schemas.__shared ?? {}).join(', ')}`,
    );
  return Object.fromEntries(
    Object.entries(schemas).map(([id, { $schema: _s, $id: _i, ...schema }]) => [id, schema as Json]),
  );
}

function operation(path: string, spec: OperationSpec): OpenApiOperation {
  const parameters = [...pathParameters(path), ...queryParameters(spec.query)];
  return {
    operationId: spec.operationId,
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    tags: [spec.tag],
    ...(parameters.length ? { parameters } : {}),
    ...(spec.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: ref(spec.body) } } } }
      : {}),
    responses: responses(spec),
  };
}

function pathParameters(path: string): NonNullable<OpenApiOperation['parameters']> {
  return [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => {
    const parameter = PATH_PARAMETERS[name!];
    if (!parameter)
      throw new OpenApiDocumentError(
        `No schema for the path parameter {${name}} of ${path} in PATH_PARAMETERS`,
      );
    return {
      name: name!,
      in: 'path',
      required: true,
      description: parameter.description,
      schema: inlineSchema(parameter.schema, 'input'),
    };
  });
}

/** One parameter per member of the query schema (the API refuses members it does not know). */
function queryParameters(query: z.ZodObject | undefined): NonNullable<OpenApiOperation['parameters']> {
  if (!query) return [];
  const schema = inlineSchema(query, 'input') as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(schema.properties ?? {}).map(([name, property]) => ({
    name,
    in: 'query',
    required: schema.required?.includes(name) ?? false,
    schema: property,
  }));
}

/** `unrepresentable: 'any'`: what JSON Schema cannot say (z.custom, a bigint, a Date) becomes `{}`. */
function inlineSchema(schema: z.ZodType, io: 'input' | 'output', unrepresentable?: 'any'): Json {
  const { $schema: _, ...json } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    ...(unrepresentable ? { unrepresentable } : {}),
  });
  return json;
}

const GATEWAY: Partial<Record<number, string>> = {
  403: 'API Gateway: the request is unsigned, its signature is bad, or the principal may not invoke the route.',
  413: 'API Gateway: the body is over 10 MB.',
  429: 'API Gateway: the stage is throttling requests; retry with backoff.',
  500: 'API Gateway: the function failed, timed out or answered more than 6 MB.',
  503: 'API Gateway: the function took more than 30 s.',
};
const WITH_BODY_ONLY = new Set([413]);

const CALLER_PROBLEMS: Partial<Record<number, string>> = {
  401: 'No IAM caller identity (NO_CALLER_IDENTITY). Only the local stack answers this: in AWS an unsigned request gets API Gateway’s 403.',
  503: 'DynamoDB is throttling or did not answer (THROTTLED, READ_INCOMPLETE, WRITE_OUTCOME_UNKNOWN): send the same request again after `retry-after` seconds.',
};
const ANY_PROBLEMS: Partial<Record<number, string>> = {
  500: 'Something failed on our side (INTERNAL_ERROR); the request may be retried.',
  504: 'The request ran out of the function’s time waiting for DynamoDB (DEADLINE) and may have been applied: send the same request again after `retry-after` seconds.',
};

/** The 2xx answers, then every error: problem+json from the function, `{message}` JSON from API Gateway. */
function responses(spec: OperationSpec): OpenApiOperation['responses'] {
  const out: OpenApiOperation['responses'] = {};
  for (const answer of spec.answers) {
    out[answer.status] = {
      description: answer.description,
      ...(answer.headers
        ? {
            headers: Object.fromEntries(
              Object.entries(answer.headers).map(([name, description]) => [
                name,
                { description, required: true, schema: { type: 'string' } },
              ]),
            ),
          }
        : {}),
      ...(answer.schema ? { content: { 'application/json': { schema: ref(answer.schema) } } } : {}),
    };
  }
  const problems: Partial<Record<number, string[]>> = {};
  const add = (status: number, text: string | undefined) => {
    if (text) (problems[status] ??= []).push(text);
  };
  for (const [status, text] of Object.entries(spec.problems)) add(Number(status), text);
  if (spec.callerScoped !== false)
    for (const [s, text] of Object.entries(CALLER_PROBLEMS)) add(Number(s), text);
  for (const [status, text] of Object.entries(ANY_PROBLEMS)) add(Number(status), text);
  // API Gateway's 413 is about a body: only operations that take one can meet it.
  const gateway = Object.fromEntries(
    Object.entries(GATEWAY).filter(([status]) => spec.body || !WITH_BODY_ONLY.has(Number(status))),
  );
  const statuses = new Set([...Object.keys(problems), ...Object.keys(gateway)].map(Number));
  for (const status of [...statuses].sort((a, b) => a - b)) {
    const fromFunction = problems[status];
    const fromGateway = gateway[status];
    out[status] = {
      description: [...(fromFunction ?? []), ...(fromGateway ? [fromGateway] : [])].join(' '),
      ...((status === 503 || status === 504) && fromFunction
        ? {
            headers: {
              'retry-after': {
                description:
                  'Seconds to wait before sending the same request again (the function’s 503s and 504s).',
                schema: { type: 'integer', minimum: 0 },
              },
            },
          }
        : {}),
      content: {
        ...(fromFunction ? { 'application/problem+json': { schema: ref('Problem') } } : {}),
        ...(fromGateway ? { 'application/json': { schema: ref('GatewayMessage') } } : {}),
      },
    };
  }
  return out;
}
