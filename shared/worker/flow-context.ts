/**
 * What a handler's context adds for flows and steps (ctx.step, ctx.enqueueChildren,
 * ctx.waitForChildren): the attempt's memory of its steps and of the children it numbered, over the
 * store's writes under the attempt's lease (store/steps.ts, store/children.ts).
 */
import { FlowsUnsupportedError, ValidationError, type InputProblem } from '../errors.js';
import { MAX_PAYLOAD_BYTES } from '../task-inputs.js';
import type { Lease } from '../task-inputs.js';
import type { Task } from '../task-model.js';
import { StepFencedError, type StoredStep } from '../store/steps.js';
import type { EnqueueChildrenInput, RaisedChildren } from '../store/children.js';
import { WaitForChildren, type ChildTask } from '../tasks/define.js';

/** The store's side of flows and steps, as an execution uses it. */
export interface FlowStore {
  readSteps(task: { id: string; createdAt: number }): Promise<Map<string, StoredStep>>;
  writeStep(
    lease: Pick<Lease, 'taskId' | 'token' | 'createdAt'>,
    name: string,
    result: string,
  ): Promise<void>;
  enqueueChildren(input: EnqueueChildrenInput): Promise<RaisedChildren>;
}

const STEP_NAME = /^[\x21-\x7e]{1,128}$/;

export class FlowContext {
  private steps: Promise<Map<string, StoredStep>> | undefined;
  private readonly stepNames = new Set<string>();
  /** The next child's number, and the parent's child count as this attempt knows it. */
  private next: number;
  /** Undefined after an enqueue that failed part way: the store reads the count again. */
  private known: number | undefined;
  private readonly base: number;

  constructor(
    private readonly store: FlowStore | undefined,
    private readonly task: Task,
    private readonly lease: () => Lease,
    family: { count: number; base: number } | undefined,
    /** A child checked against its type (checkTask), with its type's maxAttempts filled in. */
    private readonly checkChild: (child: ChildTask) => { task: ChildTask; problems: InputProblem[] },
    private readonly onLeaseLost: () => void = () => undefined,
  ) {
    this.base = family?.base ?? 0;
    this.next = this.base;
    this.known = family?.count ?? 0;
  }

  /** How many children the parent has as this attempt knows it (the wait records it). */
  get childCount(): number {
    return this.known ?? this.next;
  }

  async step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
    const store = this.need();
    if (typeof name !== 'string' || !STEP_NAME.test(name))
      throw new ValidationError('step', [
        { path: 'name', message: 'must be 1-128 printable ASCII characters without spaces' },
      ]);
    if (this.stepNames.has(name))
      throw new ValidationError('step', [
        { path: 'name', message: `"${name}" is used twice in this attempt; step names are unique per task` },
      ]);
    this.stepNames.add(name);
    // Read once per attempt, at its first step; a failed read is read again by the next step.
    this.steps ??= store.readSteps(this.task).catch((error: unknown) => {
      this.steps = undefined;
      throw error;
    });
    const stored = (await this.steps).get(name);
    if (stored) return JSON.parse(stored.result) as T;
    const value = await fn();
    const text = JSON.stringify(value ?? null);
    if (Buffer.byteLength(text, 'utf8') > MAX_PAYLOAD_BYTES)
      throw new ValidationError('step', [
        { path: 'result', message: `is larger than ${MAX_PAYLOAD_BYTES} bytes as JSON, a payload's limit` },
      ]);
    try {
      await store.writeStep(this.lease(), name, text);
    } catch (error) {
      // A newer attempt holds the task: this one stops, as on any lost lease.
      if (error instanceof StepFencedError) this.onLeaseLost();
      throw error;
    }
    return JSON.parse(text) as T;
  }

  /** Calls of ctx.enqueueChildren one after another: each numbers its children from where the last ended. */
  private enqueueing: Promise<unknown> = Promise.resolve();

  enqueueChildren(children: ChildTask[]): Promise<string[]> {
    const mine = this.enqueueing.then(() => this.enqueueNow(children));
    this.enqueueing = mine.catch(() => undefined);
    return mine;
  }

  private async enqueueNow(children: ChildTask[]): Promise<string[]> {
    const store = this.need();
    if (!Array.isArray(children))
      throw new ValidationError('enqueueChildren', [
        { path: 'children', message: 'must be an array of tasks' },
      ]);
    // Each child checked as an enqueue's task is (tasks/task-checks.ts), before anything is written.
    const problems: InputProblem[] = [];
    const checked = children.map((child, i) => {
      if (typeof child !== 'object' || child === null) {
        problems.push({ path: `${i}`, message: 'must be a task {type, payload, ...}' });
        return child;
      }
      const { task, problems: found } = this.checkChild(child);
      problems.push(...found.map((p) => ({ ...p, path: `${i}.${p.path}` })));
      return task;
    });
    if (problems.length > 0) throw new ValidationError('enqueueChildren', problems);
    const known = this.known;
    // Until it answers, the count is unknown: a failure part way may have raised it.
    this.known = undefined;
    const raised = await store.enqueueChildren({
      lease: this.lease(),
      parentOwner: this.task.owner,
      children: checked,
      from: this.next,
      ...(known === undefined ? {} : { known }),
    });
    this.next += children.length;
    this.known = raised.count;
    return raised.ids;
  }

  waitForChildren(): WaitForChildren {
    // This attempt enqueued children, or an earlier one did this round's (a step that enqueued them
    // was replayed): either way there are children to wait for.
    if (this.next === this.base && (this.known ?? this.base) <= this.base)
      throw new ValidationError('waitForChildren', [
        { path: 'children', message: 'this attempt enqueued no children: call ctx.enqueueChildren first' },
      ]);
    return new WaitForChildren();
  }

  private need(): FlowStore {
    if (!this.store) throw new FlowsUnsupportedError();
    return this.store;
  }
}
