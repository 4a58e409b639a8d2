/**
 * The OpenAPI document as the API Lambda serves it: docs/openapi.json, generated from the zod schemas
 * (`npm run openapi`, checked by `npm test`) and copied next to the bundle by the stack's bundling.
 * Read from the file, not generated in the function: the generator and zod's JSON Schema conversion
 * would add about 30 KB to the API bundle, which every cold start loads.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { LeaseholdError } from '../errors.js';

/** The file name in the Lambda's task root (infra/leasehold-function.ts copies it there). */
export const OPENAPI_ASSET = 'openapi.json';

export class OpenApiFileError extends LeaseholdError {
  override name = 'OpenApiFileError';
  override readonly code = 'OPENAPI_FILE_UNREADABLE';
  override readonly status = 500;

  /** The caller is not told the server's paths (the log has them). */
  override callerDetail(): string {
    return 'The OpenAPI document cannot be read on the server; docs/openapi.json in the repository is the same document.';
  }
}

/**
 * Where the document is: in the task root on Lambda; outside Lambda (tests, the functions run by hand
 * from the repository), docs/openapi.json under the working directory.
 */
export function openApiPath(env: Record<string, string | undefined>): string {
  return env.LAMBDA_TASK_ROOT ? join(env.LAMBDA_TASK_ROOT, OPENAPI_ASSET) : resolve('docs', OPENAPI_ASSET);
}

/** A reader of the document at `path`: read and parsed at the first request, then kept. */
export function openApiFile(path: string): () => unknown {
  let document: unknown;
  return () => {
    if (document === undefined) {
      try {
        document = JSON.parse(readFileSync(path, 'utf8')) as unknown;
      } catch (error) {
        throw new OpenApiFileError(
          `The OpenAPI document ${path} cannot be read: ${(error as Error).message}`,
        );
      }
    }
    return document;
  };
}
