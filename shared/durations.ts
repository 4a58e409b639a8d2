/**
 * The longest duration any setting, task timeout or backoff may ask for: 7 days. Each one ends up as
 * a timer, and Node fires a timer longer than 2^31-1 ms (about 24.8 days) after 1 ms instead: a
 * 34-day backoff made the worker re-promote its retry in a loop of writes. Apart from config.ts so
 * the client's input schemas do not load the settings table.
 */
export const MAX_DURATION_MS = 7 * 86_400_000;
