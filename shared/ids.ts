import { createHash, randomBytes, randomUUID } from 'node:crypto';

/** Makes unique ids (task ids, write ids). Injected so tests can make them predictable. */
export type IdGenerator = () => string;

/** Random source in [0, 1), injected so jitter and shuffles are reproducible in tests. */
export type RandomSource = () => number;

export const randomId: IdGenerator = () => randomUUID();

export const mathRandom: RandomSource = () => Math.random();

/** Puts `items` in random order, in place (Fisher-Yates), with the given random source. */
export function shuffleInPlace<T>(items: T[], random: RandomSource): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/**
 * The task id for an idempotent enqueue: the same owner and key always give the same id, so a
 * retried enqueue meets its own first write at the `attribute_not_exists` condition.
 */
export function idempotentTaskId(owner: string, idempotencyKey: string): string {
  const digest = createHash('sha256').update(owner).update('\u0000').update(idempotencyKey).digest('hex');
  return `idem-${digest.slice(0, 32)}`;
}

/**
 * The task id of generation `generation` of a debounce key (per owner and type): racing enqueuers of
 * one generation meet at the same id, and a new generation (the last one started) is a new task.
 */
export function debounceTaskId(owner: string, type: string, key: string, generation: number): string {
  const digest = createHash('sha256')
    .update(owner)
    .update('\u0000')
    .update(type)
    .update('\u0000')
    .update(key)
    .update('\u0000')
    .update(String(generation))
    .digest('hex');
  return `debounce-${digest.slice(0, 32)}`;
}

/**
 * A short, fixed-size name for an owner inside a key (a rotation key: group-rules.ts): 22 characters of
 * [A-Za-z0-9_-] (128 bits of SHA-256), whatever the owner holds, so two owners never share one.
 */
export function ownerDigest(owner: string): string {
  return createHash('sha256').update(owner).digest('base64url').slice(0, 22);
}

/** The partition of a debounce key's generation pointer (per owner and type). */
export function debouncePointerId(owner: string, type: string, key: string): string {
  const digest = createHash('sha256')
    .update(owner)
    .update('\u0000')
    .update(type)
    .update('\u0000')
    .update(key);
  return digest.digest('hex').slice(0, 32);
}

/** A stable digest of an enqueue request, stored with the task to tell a retry from a conflicting reuse of a key. */
export function requestFingerprint(parts: unknown): string {
  return createHash('sha256').update(stableJson(parts)).digest('base64url');
}

/**
 * JSON with object keys sorted, so two equal payloads give equal text whatever their key order.
 * JSON.stringify with a replacer recurses once per level and overflows the stack a couple of thousand
 * levels down; enqueue's input check (task-inputs.ts) bounds payloads to MAX_PAYLOAD_DEPTH levels
 * before this runs. The text must stay exactly what it was: stored fingerprints are compared with it.
 */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      );
    }
    return v;
  });
}

/** A short random worker id suffix. */
export function randomSuffix(bytes = 4): string {
  return randomBytes(bytes).toString('hex');
}

/** A fast, stable 32-bit string hash (FNV-1a) for spreading ids over shards and workers over start points. */
export function fnv1a(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

/**
 * The id of child `index` of a parent: the same parent and number always give the same id, so a flow
 * sent again (its idempotency key) or a handler's retried `ctx.enqueueChildren` meets the children it
 * wrote before instead of making them twice, and a parent can read its children without storing their ids.
 */
export function childTaskId(parentId: string, index: number): string {
  const digest = createHash('sha256').update(parentId).update('\u0000').update(String(index)).digest('hex');
  return `child-${digest.slice(0, 32)}`;
}
