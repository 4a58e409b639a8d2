/**
 * The body of POST /flows turned into the store's flow (flow-inputs.ts), for the submitter to check
 * against the task types (task-submitter.ts enqueueFlow). A child with a `task` member is a flow of its
 * own; any other child is a task. Refused fields are named by their path in the body, as the caller
 * wrote it: `children.3.task.payload.n` (a field of a nested flow's task), `children.2.type` (a child
 * task's). Nothing is written for a refused body.
 *
 * The limits (flow-rules.ts) are checked first, by a walk with an explicit stack: a body nested far
 * deeper than any flow may be is refused without zod recursing down it.
 */
import type * as z from 'zod';
import type { LeaseholdConfig } from '../config.js';
import { ValidationError, type InputProblem } from '../errors.js';
import type { FlowNode, FlowTaskFields } from '../flow-inputs.js';
import type { FlowSubmission } from '../tasks/task-submitter.js';
import { MAX_FLOW_DEPTH, MAX_FLOW_TASKS } from '../flow-rules.js';
import { flowBody, type flowChildFlowBody, type flowChildTaskBody } from './request-schemas.js';

const OPERATION = 'request body';

type TaskBody = z.output<typeof flowChildTaskBody>;
type ChildBody = TaskBody | z.output<typeof flowChildFlowBody>;

/** The store's flow for `body` sent by `owner`; a ValidationError (400, nothing written) naming each bad field. */
export function flowRequest(
  body: unknown,
  owner: string,
  config: Pick<LeaseholdConfig, 'maxExecutionMs'>,
): FlowSubmission {
  checkLimits(body);
  const parsed = flowBody.safeParse(body);
  if (!parsed.success) throw new ValidationError(OPERATION, problemsOf(parsed.error.issues, body, []));
  const { task, children, idempotencyKey } = parsed.data;
  // The type's own timeout is the submitter's check; this one is the deployment's, as POST /tasks has it.
  const tooLong: InputProblem[] = [];
  const root: FlowNode = {
    task: storeTask(task, 'task.', config, tooLong),
    children: children.map((child, i) => storeChild(child, `children.${i}.`, config, tooLong)),
  };
  if (tooLong.length > 0) throw new ValidationError(OPERATION, tooLong);
  return { owner, ...(idempotencyKey === undefined ? {} : { idempotencyKey }), root };
}

/** Refuses a flow deeper than MAX_FLOW_DEPTH or with more than MAX_FLOW_TASKS tasks below its root, saying the limit. */
function checkLimits(body: unknown): void {
  let tasks = 0;
  let depth = 0;
  const stack: [unknown, number][] = [[body, 0]];
  while (stack.length > 0) {
    const [node, level] = stack.pop()!;
    tasks++;
    depth = Math.max(depth, level);
    const children = isObject(node) ? node.children : undefined;
    if (Array.isArray(children)) for (const child of children) stack.push([child, level + 1]);
  }
  const problems: InputProblem[] = [];
  if (depth > MAX_FLOW_DEPTH)
    problems.push({
      path: 'children',
      message: `nests ${depth} levels of children; a flow may nest at most ${MAX_FLOW_DEPTH}`,
    });
  if (tasks - 1 > MAX_FLOW_TASKS)
    problems.push({
      path: 'children',
      message: `holds ${tasks - 1} tasks below its root; a flow may hold at most ${MAX_FLOW_TASKS}`,
    });
  if (problems.length > 0) throw new ValidationError(OPERATION, problems);
}

/**
 * zod's issues as problems named by their path in the body. A child that fits neither form is one
 * union issue holding both forms' issues: the form the child was sent in (a `task` member: a flow)
 * gives its own issues, under the child's path. A key a task does not take is named itself.
 */
function problemsOf(issues: readonly z.core.$ZodIssue[], body: unknown, at: PropertyKey[]): InputProblem[] {
  return issues.flatMap((issue): InputProblem[] => {
    const path = [...at, ...issue.path];
    if (issue.code === 'invalid_union') {
      const child = valueAt(body, path);
      if (!isObject(child))
        return [
          {
            path: pathText(path),
            message: 'must be a task {type, payload, ...} or a flow {task: {type, payload, ...}, children}',
          },
        ];
      // The union's forms, in flowChildBody's order: a flow, then a task.
      const form = 'task' in child ? issue.errors[0] : issue.errors[1];
      return problemsOf(form ?? [], body, path);
    }
    if (issue.code === 'unrecognized_keys') {
      const holder = valueAt(body, path);
      const flow = path.length === 0 || (isObject(holder) && 'task' in holder);
      return issue.keys.map((key) => ({
        path: pathText([...path, key]),
        message: refusedKey(key, flow ? (path.length === 0 ? 'root' : 'child flow') : 'task'),
      }));
    }
    return [{ path: pathText(path), message: issue.message }];
  });
}

/** Why a member is refused: a flow's tasks have no due time, debounce or key of their own. */
function refusedKey(key: string, where: 'root' | 'child flow' | 'task'): string {
  if (where === 'root')
    return key === 'type' || key === 'payload'
      ? 'is not a field of a flow: give the root task as {task: {type, payload, ...}, children}'
      : 'is not a field of a flow: {task, children, idempotencyKey}';
  if (where === 'child flow')
    return key === 'idempotencyKey'
      ? 'is not taken here: give the flow one idempotencyKey, beside its root task'
      : 'is not a field of a child flow: {task, children}';
  if (key === 'delaySeconds' || key === 'runAt')
    return 'is not taken by a task of a flow: a child is due at once, a parent when its children have ended';
  if (key === 'idempotencyKey')
    return 'is not taken by a task of a flow: give the flow one idempotencyKey, beside its root task';
  if (key === 'debounce') return 'is not taken by a task of a flow: its tasks are not debounced';
  return 'is not a field of a task of a flow (type, payload, priority, maxAttempts, timeoutSeconds, group; optional on a child)';
}

function storeTask(
  task: TaskBody,
  path: string,
  config: Pick<LeaseholdConfig, 'maxExecutionMs'>,
  problems: InputProblem[],
): FlowTaskFields {
  if (task.timeoutSeconds !== undefined && task.timeoutSeconds * 1000 > config.maxExecutionMs)
    problems.push({
      path: `${path}timeoutSeconds`,
      message: `must be at most ${Math.floor(config.maxExecutionMs / 1000)} (the maximum execution time)`,
    });
  return {
    type: task.type,
    ...(task.payload === undefined ? {} : { payload: task.payload }),
    ...(task.priority === undefined ? {} : { priority: task.priority }),
    ...(task.maxAttempts === undefined ? {} : { maxAttempts: task.maxAttempts }),
    ...(task.timeoutSeconds === undefined ? {} : { timeoutMs: task.timeoutSeconds * 1000 }),
    ...(task.group === undefined ? {} : { group: task.group }),
    ...(task.optional === undefined ? {} : { optional: task.optional }),
  };
}

function storeChild(
  child: ChildBody,
  path: string,
  config: Pick<LeaseholdConfig, 'maxExecutionMs'>,
  problems: InputProblem[],
): FlowNode {
  if (!('task' in child)) return { task: storeTask(child, path, config, problems) };
  return {
    task: storeTask(child.task, `${path}task.`, config, problems),
    children: child.children.map((c, i) => storeChild(c, `${path}children.${i}.`, config, problems)),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function valueAt(value: unknown, path: PropertyKey[]): unknown {
  let at = value;
  for (const key of path)
    at = typeof at === 'object' && at !== null ? (at as Record<PropertyKey, unknown>)[key] : undefined;
  return at;
}

const pathText = (path: PropertyKey[]) => (path.length ? path.map(String).join('.') : 'body');
