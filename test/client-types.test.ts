/**
 * The client's types: a payload a definition's schema would refuse does not compile, and the result
 * types follow the definition (its schema's payload, its handler's resolved return). Checked by
 * `tsc --noEmit -p .` (npm test's typecheck): each `@ts-expect-error` line must stay an error, and each
 * `expectTypeOf` must hold, or the type check fails. The calls are never made (no network): the
 * clients are declared values, used inside functions that are only type-checked.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import * as z from 'zod';
import {
  createDirectClient,
  flowTaskOf,
  taskOf,
  type BatchTask,
  type ClientTask,
  type DirectClient,
  type EnqueueFlowResult,
  type EnqueueResult,
  type FlowChildTask,
  type FinishedTask,
  type LeaseholdClient,
  type PayloadOf,
  type ResultOf,
  type TaskClient,
  type TaskId,
} from 'leasehold/client/direct';
import { defineTask } from '../shared/tasks/define.js';
import { demoBlock, demoEcho, demoReport, demoSleep } from '../tasks/demo.js';

type Sleep = typeof demoSleep;

/** A definition whose handler is synchronous and one returning a promise it did not await. */
const syncCount = defineTask({
  name: 'types.count',
  schema: z.object({ items: z.array(z.string()) }),
  handler: ({ items }) => ({ count: items.length }),
});
const promised = defineTask({
  name: 'types.promised',
  schema: z.object({ id: z.string() }),
  handler: ({ id }) => Promise.resolve({ found: id.length > 0 }),
});

describe('definition helpers', () => {
  it("PayloadOf is the schema's input, ResultOf the handler's resolved result", () => {
    expectTypeOf<PayloadOf<Sleep>>().toEqualTypeOf<{ ms: number }>();
    // An async handler's R is what it resolves to, not its Promise (defineTask infers R | Promise<R>).
    expectTypeOf<ResultOf<Sleep>>().toEqualTypeOf<{ sleptMs: number }>();
    expectTypeOf<ResultOf<typeof syncCount>>().toEqualTypeOf<{ count: number }>();
    expectTypeOf<ResultOf<typeof promised>>().toEqualTypeOf<{ found: boolean }>();
    // demo.report returns demo.sleep's handler's value (R | Promise<R>): still the plain result.
    expectTypeOf<ResultOf<typeof demoReport>>().toEqualTypeOf<{ sleptMs: number }>();
    // A field with a default may be left out of the payload.
    expectTypeOf<PayloadOf<typeof demoBlock>>().toEqualTypeOf<{
      afterMs: number;
      blockMs: number;
      attempts?: number[] | undefined;
    }>();
    expectTypeOf<PayloadOf<typeof demoEcho>>().toBeUnknown();
    expectTypeOf<PayloadOf<string>>().toBeNever();
    expect([demoSleep.name, syncCount.name, promised.name]).toEqual([
      'demo.sleep',
      'types.count',
      'types.promised',
    ]);
  });

  it('taskOf checks the payload against the definition', () => {
    const ok = taskOf(demoSleep, { ms: 10 }, { priority: 1 });
    expectTypeOf(ok).toEqualTypeOf<BatchTask>();
    expect(ok).toEqual({ type: 'demo.sleep', payload: { ms: 10 }, options: { priority: 1 } });
    // @ts-expect-error ms must be a number
    taskOf(demoSleep, { ms: 'x' });
    // @ts-expect-error ms is required
    taskOf(demoSleep, {});
    // @ts-expect-error no such option
    taskOf(demoSleep, { ms: 1 }, { delaySeconds: 1 });
  });

  it('flowTaskOf checks the payload against the definition and keeps its types for the flow’s root', () => {
    const ok = flowTaskOf(demoSleep, { ms: 10 }, { optional: true, timeoutSeconds: 5 });
    expectTypeOf(ok).toEqualTypeOf<FlowChildTask<{ ms: number }, { sleptMs: number }>>();
    expect(ok).toEqual({ type: 'demo.sleep', payload: { ms: 10 }, optional: true, timeoutSeconds: 5 });
    // @ts-expect-error ms must be a number
    flowTaskOf(demoSleep, { ms: 'x' });
    // @ts-expect-error a flow's tasks take whole seconds, and no delay
    flowTaskOf(demoSleep, { ms: 1 }, { delaySeconds: 1 });
  });
});

/**
 * The checks every client must pass, whichever way it sends: only type-checked (the function is never
 * called), so nothing goes over the network.
 */
function typedCalls(client: TaskClient) {
  return async () => {
    const sleeping = await client.enqueue(demoSleep, { ms: 10 });
    expectTypeOf(sleeping).toEqualTypeOf<EnqueueResult<{ ms: number }, { sleptMs: number }>>();
    expectTypeOf(sleeping.task.payload).toEqualTypeOf<{ ms: number } | undefined>();
    expectTypeOf(sleeping.task.id).toEqualTypeOf<TaskId<{ ms: number }, { sleptMs: number }>>();
    // The id remembers the types: waitFor and get answer with them.
    const done = await client.waitFor(sleeping.task.id);
    expectTypeOf(done).toEqualTypeOf<FinishedTask<{ ms: number }, { sleptMs: number }>>();
    expectTypeOf(done.result).toEqualTypeOf<{ sleptMs: number } | undefined>();
    expectTypeOf(done.status).toEqualTypeOf<'SUCCESS' | 'FAILED' | 'CANCELLED'>();
    expectTypeOf(await client.get(sleeping.task.id)).toEqualTypeOf<
      ClientTask<{ ms: number }, { sleptMs: number }>
    >();
    expectTypeOf((await client.cancel(sleeping.task.id)).result).toEqualTypeOf<
      { sleptMs: number } | undefined
    >();
    expectTypeOf((await client.retry(sleeping.task.id)).payload).toEqualTypeOf<{ ms: number } | undefined>();

    const counted = await client.enqueue(syncCount, { items: ['a'] }, { delay: 1_000 });
    expectTypeOf((await client.waitFor(counted.task.id)).result).toEqualTypeOf<
      { count: number } | undefined
    >();

    // @ts-expect-error ms must be a number
    await client.enqueue(demoSleep, { ms: 'x' });
    // @ts-expect-error ms is required
    await client.enqueue(demoSleep, {});
    // @ts-expect-error the schema is strict: no other keys
    await client.enqueue(demoSleep, { ms: 10, extra: true });
    // @ts-expect-error the payload is not optional for a definition
    await client.enqueue(demoSleep);
    // @ts-expect-error options are in milliseconds, named as EnqueueOptions names them
    await client.enqueue(demoSleep, { ms: 10 }, { delaySeconds: 5 });

    // By name the payload is unknown (the API checks it at run time), and so are the results.
    const byName = await client.enqueue('demo.sleep', { anything: ['goes'] });
    expectTypeOf(byName).toEqualTypeOf<EnqueueResult>();
    expectTypeOf((await client.waitFor(byName.task.id)).result).toBeUnknown();
    const plainId: string = sleeping.task.id;
    expectTypeOf((await client.get(plainId)).result).toBeUnknown();

    for await (const task of client.list({ status: 'QUEUED', pageSize: 10 }))
      expectTypeOf(task).toEqualTypeOf<ClientTask>();
    // @ts-expect-error not a status
    client.list({ status: 'DONE' });

    const many = await client.enqueueMany([taskOf(demoSleep, { ms: 1 }), { type: 'demo.echo', payload: 1 }]);
    expectTypeOf(many.created).toBeNumber();

    // A flow whose root is built from a definition answers with its types; by name, unknown.
    const flow = await client.enqueueFlow({
      task: flowTaskOf(demoSleep, { ms: 1 }),
      children: [
        flowTaskOf(demoEcho, 'x'),
        { type: 'demo.echo', payload: 1, optional: true },
        { task: { type: 'demo.echo' }, children: [{ type: 'demo.echo' }] },
      ],
    });
    expectTypeOf(flow).toEqualTypeOf<EnqueueFlowResult<{ ms: number }, { sleptMs: number }>>();
    expectTypeOf((await client.waitFor(flow.id)).result).toEqualTypeOf<{ sleptMs: number } | undefined>();
    expectTypeOf(flow.ids.children?.[0]?.id).toEqualTypeOf<string | undefined>();
    const byNameFlow = await client.enqueueFlow({
      task: { type: 'demo.sum' },
      children: [{ type: 'demo.echo' }],
    });
    expectTypeOf(byNameFlow.task.result).toBeUnknown();
    // @ts-expect-error a child flow needs its children
    await client.enqueueFlow({ task: { type: 'demo.sum' }, children: [{ task: { type: 'demo.sum' } }] });
    await client.enqueueFlow({
      task: { type: 'demo.sum' },
      // @ts-expect-error a flow's tasks take no delay of their own
      children: [{ type: 'demo.echo', delaySeconds: 1 }],
    });
  };
}

describe('the clients', () => {
  it('LeaseholdClient (HTTP) has the typed calls and schedules', () => {
    const check = (client: LeaseholdClient) => {
      expectTypeOf(client.schedules.list).returns.toEqualTypeOf<
        AsyncIterable<Awaited<ReturnType<LeaseholdClient['schedules']['get']>>>
      >();
      return typedCalls(client);
    };
    expect(typeof check).toBe('function');
  });

  it('DirectClient has the same typed calls, its owner, and no schedules', () => {
    const check = (client: DirectClient) => {
      expectTypeOf(client.owner).returns.toEqualTypeOf<Promise<string>>();
      // @ts-expect-error direct mode has no schedules (they need EventBridge Scheduler)
      void client.schedules;
      return typedCalls(client);
    };
    expect(typeof check).toBe('function');
    expectTypeOf(createDirectClient).returns.toEqualTypeOf<DirectClient>();
    expectTypeOf<DirectClient>().toExtend<TaskClient>();
  });

  it('createDirectClient requires the table and the task definitions', () => {
    const start = () => {
      // @ts-expect-error the table is required
      createDirectClient({ definitions: [demoSleep] });
      // @ts-expect-error the definitions are required (the core never imports the catalog itself)
      createDirectClient({ tableName: 'leasehold-tasks' });
      return createDirectClient({ tableName: 'leasehold-tasks', definitions: [demoSleep, demoEcho] });
    };
    expect(typeof start).toBe('function');
  });
});
