/** A task's group name and the group limits' bounds (group-rules.ts): what enqueue input checks. */
import * as z from 'zod';

export const MAX_GROUP_CHARS = 128;
/** The most tasks of one group that may run at once: the slots are read with one Query per visit. */
export const MAX_GROUP_CONCURRENCY = 100;
export const DEFAULT_GROUP_CONCURRENCY = 1;

/**
 * A group name: printable ASCII without spaces. The space ends a rotation key in a ready sort key, so
 * a name without one can never reach into another group's entries.
 */
export const groupSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(MAX_GROUP_CHARS, `must be at most ${MAX_GROUP_CHARS} characters`)
  .regex(
    /^[!-~]+$/,
    'must be printable ASCII without spaces (letters, digits and punctuation such as - _ . : / @)',
  );
