/** API Gateway HTTP API (payload format 2.0) responses: JSON bodies and RFC 9457 problem details. */
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

export type ApiResponse = APIGatewayProxyStructuredResultV2 & {
  statusCode: number;
  body: string;
  headers: Record<string, string>;
};

export function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): ApiResponse {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** A problem+json answer. `detail` says what to fix; `extra` holds its other members (e.g. `errors`, one per bad field) and headers. */
export function problem(
  status: number,
  code: string,
  detail: string,
  extra: { headers?: Record<string, string>; [member: string]: unknown } = {},
): ApiResponse {
  const { headers = {}, ...members } = extra;
  return {
    statusCode: status,
    headers: { 'content-type': 'application/problem+json', ...headers },
    body: JSON.stringify({
      type: 'about:blank',
      title: TITLES[status] ?? 'Error',
      status,
      code,
      detail,
      ...members,
    }),
  };
}
