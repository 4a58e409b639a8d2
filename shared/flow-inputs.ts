/**
 * A flow as the store takes it (POST /flows, client.enqueueFlow): a root task and its children, each a
 * task or a flow of its own, checked whole before anything is written (flow-rules.ts has the limits).
 */
import * as z from 'zod';
import { groupSchema } from './group-name.js';
import { MAX_CHILDREN, MAX_FLOW_DEPTH, MAX_FLOW_TASKS } from './flow-rules.js';
import { PRIORITY_LIMIT } from './table-layout.js';
import { idempotencyKeySchema, ownerSchema, taskPayload, taskTypeSchema } from './task-inputs.js';

/** One task of a flow: what an enqueue takes, less what a flow decides (its due time, its key). */
export const flowTaskFields = z
  .object({
    type: taskTypeSchema,
    payload: taskPayload.optional(),
    priority: z.number().int('must be a whole number').min(-PRIORITY_LIMIT).max(PRIORITY_LIMIT).optional(),
    maxAttempts: z.number().int('must be a whole number').min(1).max(100).optional(),
    timeoutMs: z.number().int('must be whole milliseconds').positive().optional(),
    group: groupSchema.optional(),
    /** A child whose FAILED or CANCELLED end does not fail its parent. */
    optional: z.boolean().optional(),
  })
  .strict();
export type FlowTaskFields = z.output<typeof flowTaskFields>;

export interface FlowNode {
  task: FlowTaskFields;
  children?: FlowNode[];
}

export const flowNode: z.ZodType<FlowNode> = z.lazy(() =>
  z
    .object({
      task: flowTaskFields,
      children: z
        .array(flowNode)
        .min(1, 'must list at least one child (a task without children has no `children`)')
        .max(MAX_CHILDREN, `must list at most ${MAX_CHILDREN} children`)
        .optional(),
    })
    .strict(),
);

/** Levels of parents in a flow (a task without children: 0) and the number of tasks in it. */
export function flowShape(node: FlowNode): { depth: number; tasks: number } {
  let depth = 0;
  let tasks = 1;
  for (const child of node.children ?? []) {
    const shape = flowShape(child);
    depth = Math.max(depth, shape.depth + 1);
    tasks += shape.tasks;
  }
  return { depth: node.children?.length ? Math.max(depth, 1) : 0, tasks };
}

export const flowInput = z
  .object({
    owner: ownerSchema,
    /** Sent again with the same key, the flow is answered (and any part a failed first send left unwritten written), not made twice. */
    idempotencyKey: idempotencyKeySchema.optional(),
    root: flowNode,
  })
  .strict()
  .superRefine((flow, ctx) => {
    if (flow.root.task.optional !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['root', 'task', 'optional'],
        message: 'only a child can be optional',
      });
    if (!flow.root.children?.length)
      ctx.addIssue({
        code: 'custom',
        path: ['root', 'children'],
        message: 'a flow needs at least one child (enqueue a task without children with POST /tasks)',
      });
    const { depth, tasks } = flowShape(flow.root);
    if (depth > MAX_FLOW_DEPTH)
      ctx.addIssue({
        code: 'custom',
        path: ['root', 'children'],
        message: `nests ${depth} levels of children; a flow may nest at most ${MAX_FLOW_DEPTH}`,
      });
    if (tasks - 1 > MAX_FLOW_TASKS)
      ctx.addIssue({
        code: 'custom',
        path: ['root', 'children'],
        message: `holds ${tasks - 1} tasks below its root; a flow may hold at most ${MAX_FLOW_TASKS}`,
      });
  });
export type FlowInput = z.input<typeof flowInput>;
