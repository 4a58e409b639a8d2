/** A request body or query string checked against its zod schema: the parsed value, or a ValidationError naming each bad field. */
import type * as z from 'zod';
import { ValidationError } from '../errors.js';

export function parseRequest<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: 'body' | 'query',
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new ValidationError(
    where === 'body' ? 'request body' : 'query string',
    result.error.issues.map((i) => ({
      path: i.path.length ? i.path.map(String).join('.') : where,
      message: i.message,
    })),
  );
}
