/**
 * The page's logic that needs no browser: the hour of outcomes kept across refreshes (each GET /stats
 * after the first re-reads only the last few minutes, which late flushes may still add to), the enqueue form built from the payload schemas the
 * OpenAPI document carries for the demo task types, and when a task's page reads its children and steps
 * again (and how it cuts a result to a table cell).
 */
import { describe, expect, it } from 'vitest';
import { API_ROUTES } from '../shared/api/api-handler.js';
import { openApiDocument, TASK_TYPES_EXTENSION } from '../shared/api/openapi.js';
import { demoTasks } from '../tasks/demo.js';

// Browser modules without type declarations: loaded as any.
const page = (name: string) => import(new URL(`../tools/dashboard/public/${name}`, import.meta.url).href);
const minutes = await page('minutes.mjs');
const form = await page('schema-form.mjs');
const relations = await page('task-relations.mjs');

const MINUTE = 60_000;
const T = Date.parse('2026-11-30T09:30:20Z');
const iso = (ms: number) => new Date(ms).toISOString();
const minuteAt = (ms: number, succeeded: number, type = 'demo.echo') => ({
  at: iso(Math.floor(ms / MINUTE) * MINUTE),
  types: { [type]: { succeeded, failed: 0, retried: 0, cancelled: 0 } },
});

describe('the hour of outcomes', () => {
  const minuteStart = Math.floor(T / MINUTE) * MINUTE;

  it('asks for nothing first (the API reads its whole hour), then from a few minutes before the last answer', () => {
    expect(minutes.sinceFor(undefined)).toBeUndefined();
    expect(minutes.sinceFor({ at: iso(T), minutes: [] })).toBe(
      iso(minuteStart - minutes.REREAD_MINUTES * MINUTE),
    );
    expect(minutes.REREAD_MINUTES).toBeGreaterThanOrEqual(3);
  });

  it('the first answer is the hour as the API sent it, whatever the browser clock says', () => {
    const answer = { at: iso(T), minutes: [minuteAt(T - 59 * MINUTE, 1), minuteAt(T, 3)] };
    expect(minutes.mergeMinutes(undefined, minutes.sinceFor(undefined), answer)).toEqual(answer);
  });

  it('replaces the minutes from `since` on, keeps the earlier ones, drops those older than the hour', () => {
    const held = {
      at: iso(T),
      minutes: [
        minuteAt(T - 59 * MINUTE, 1),
        minuteAt(T - 10 * MINUTE, 7),
        minuteAt(T - MINUTE, 2),
        minuteAt(T, 3),
      ],
    };
    const since = minutes.sinceFor(held);
    // The API answers every minute from `since` with its whole count so far.
    const next = minutes.mergeMinutes(held, since, {
      at: iso(T + MINUTE),
      minutes: [minuteAt(T - MINUTE, 2), minuteAt(T, 4), minuteAt(T + MINUTE, 5, 'demo.fail')],
    });
    expect(next.minutes.map((m: any) => [m.at, Object.values(m.types)[0]])).toEqual([
      [iso(minuteStart - 10 * MINUTE), expect.objectContaining({ succeeded: 7 })],
      [iso(minuteStart - MINUTE), expect.objectContaining({ succeeded: 2 })],
      [iso(minuteStart), expect.objectContaining({ succeeded: 4 })],
      [iso(minuteStart + MINUTE), expect.objectContaining({ succeeded: 5 })],
    ]);
    const bars = minutes.minuteBars(next);
    expect(bars).toHaveLength(60);
    expect(bars.at(-1)).toMatchObject({ succeeded: 5 });
    expect(minutes.outcomesByType(next)).toEqual({
      'demo.echo': { succeeded: 13, failed: 0, retried: 0, cancelled: 0 },
      'demo.fail': { succeeded: 5, failed: 0, retried: 0, cancelled: 0 },
    });
  });

  it('a count flushed late for an earlier minute shows after the next refresh, counted once', () => {
    // A table the API reads: whole counts per minute, which a worker's flush adds to a minute or two late.
    const table = new Map<number, number>([[minuteStart - 2 * MINUTE, 1]]);
    const answer = (at: number, since: string | undefined) => ({
      at: iso(at),
      minutes: [...table]
        .filter(([m]) => m >= (since === undefined ? at - 59 * MINUTE : Date.parse(since)))
        .sort(([a], [b]) => a - b)
        .map(([m, n]) => minuteAt(m, n)),
    });
    const refresh = (held: any, at: number) => {
      const since = minutes.sinceFor(held);
      return minutes.mergeMinutes(held, since, answer(at, since));
    };
    let held = refresh(undefined, T);
    held = refresh(held, T + 5_000);
    // Two minutes on, a worker's flush (its first write had failed) adds to the minute before T's.
    table.set(minuteStart - MINUTE, 4);
    table.set(minuteStart - 2 * MINUTE, 1 + 2);
    held = refresh(held, T + 2 * MINUTE);
    held = refresh(held, T + 2 * MINUTE + 5_000);
    const bar = (at: number) => minutes.minuteBars(held).find((b: any) => b.at === iso(at));
    expect(bar(minuteStart - 2 * MINUTE)).toMatchObject({ succeeded: 3 });
    expect(bar(minuteStart - MINUTE)).toMatchObject({ succeeded: 4 });
    expect(minutes.outcomesByType(held)['demo.echo'].succeeded).toBe(7);
  });
});

describe('the enqueue form from x-leasehold-task-types', () => {
  const types = Object.fromEntries(
    (openApiDocument(API_ROUTES, demoTasks)[TASK_TYPES_EXTENSION] as any[]).map((t) => [t.type, t]),
  );

  it('an object schema becomes labelled fields by JSON type; anything else is written as JSON', () => {
    expect(form.fieldsOf(types['demo.sleep'].payloadSchema)).toEqual([
      expect.objectContaining({ name: 'ms', kind: 'integer', required: true, min: 0, max: 900_000 }),
    ]);
    const block = form.fieldsOf(types['demo.block'].payloadSchema);
    expect(block.map((f: any) => [f.name, f.kind])).toEqual([
      ['afterMs', 'integer'],
      ['blockMs', 'integer'],
      ['attempts', 'json'],
    ]);
    expect(form.initialValues(block)).toEqual({ afterMs: '', blockMs: '', attempts: '[1]' });
    expect(form.fieldsOf(types['demo.echo'].payloadSchema)).toBeUndefined();
    expect(
      form.fieldsOf({
        type: 'object',
        properties: {
          mode: { enum: ['a', 'b'] },
          on: { type: 'boolean' },
          name: { type: ['string', 'null'] },
        },
      }),
    ).toEqual([
      expect.objectContaining({ name: 'mode', kind: 'enum', options: ['a', 'b'] }),
      expect.objectContaining({ name: 'on', kind: 'boolean' }),
      expect.objectContaining({ name: 'name', kind: 'string' }),
    ]);
  });

  it('the payload: numbers and JSON parsed, empty inputs left out, anything else sent for the API to judge', () => {
    const block = form.fieldsOf(types['demo.block'].payloadSchema);
    expect(form.payloadOf(block, { afterMs: '10', blockMs: '', attempts: '[1, 2]' })).toEqual({
      afterMs: 10,
      attempts: [1, 2],
    });
    expect(form.payloadOf(block, { afterMs: 'soon', blockMs: '5', attempts: '[1' })).toEqual({
      afterMs: 'soon',
      blockMs: 5,
      attempts: '[1',
    });
    expect(form.fieldErrors({ errors: [{ field: 'payload.ms', message: 'too big' }] })).toEqual({
      'payload.ms': 'too big',
    });
  });
});

describe('a task page’s children and steps', () => {
  const task = (fields: Record<string, unknown> = {}) => ({
    id: 't1',
    status: 'QUEUED',
    attempts: 0,
    updatedAt: '2026-11-30T09:30:20.000Z',
    ...fields,
  });
  const heldFor = (t: any, extra: Record<string, unknown> = {}) => ({
    version: relations.taskVersion(t),
    steps: [],
    ...extra,
  });

  it('reads the steps at first, and again only when the task changes or while an attempt runs', () => {
    const queued = task();
    expect(relations.extraReads(queued, undefined)).toEqual({ children: false, steps: true });
    // The dashboard-requests browser test's case: a refresh of an unchanged queued task reads the task only.
    expect(relations.extraReads(queued, heldFor(queued))).toEqual({ children: false, steps: false });
    const running = task({ status: 'RUNNING', attempts: 1, updatedAt: '2026-11-30T09:30:21.000Z' });
    expect(relations.extraReads(running, heldFor(queued)).steps).toBe(true);
    expect(relations.extraReads(running, heldFor(running)).steps).toBe(true);
    const done = task({ status: 'SUCCESS', attempts: 1, updatedAt: '2026-11-30T09:30:22.000Z' });
    expect(relations.extraReads(done, heldFor(running)).steps).toBe(true);
    expect(relations.extraReads(done, heldFor(done)).steps).toBe(false);
  });

  it('reads a parent’s children while one has not ended or the parent changed; a task without children never', () => {
    const parent = task({ status: 'WAITING_CHILDREN', children: { total: 2, pending: 1 } });
    expect(relations.extraReads(parent, undefined).children).toBe(true);
    const open = [{ status: 'SUCCESS' }, { status: 'RUNNING' }];
    const ended = [{ status: 'SUCCESS' }, { status: 'FAILED' }];
    expect(relations.extraReads(parent, heldFor(parent, { children: open })).children).toBe(true);
    expect(relations.extraReads(parent, heldFor(parent, { children: ended })).children).toBe(false);
    // The last child's end is counted on the parent: its version changes, so its children are read again.
    const readied = task({ status: 'QUEUED', children: { total: 2, pending: 0 } });
    expect(relations.extraReads(readied, heldFor(parent, { children: ended })).children).toBe(true);
    expect(relations.extraReads(task(), undefined).children).toBe(false);
    expect(relations.extraReads(task({ children: { total: 0, pending: 0 } }), undefined).children).toBe(
      false,
    );
  });

  it('cuts a result to one line of at most 120 characters, saying when it did', () => {
    expect(relations.jsonPreview({ step: 'a', attempt: 1 })).toEqual({
      text: '{"step":"a","attempt":1}',
      cut: false,
    });
    expect(relations.jsonPreview(null)).toEqual({ text: 'null', cut: false });
    expect(relations.jsonPreview(undefined)).toEqual({ text: '', cut: false });
    const long = relations.jsonPreview({ text: 'x'.repeat(500) });
    expect(long.cut).toBe(true);
    expect(long.text).toHaveLength(relations.PREVIEW_CHARS);
    expect(long.text.endsWith('…')).toBe(true);
    expect(relations.preview('a'.repeat(120))).toEqual({ text: 'a'.repeat(120), cut: false });
  });
});
