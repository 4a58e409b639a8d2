/**
 * Enqueueing through the registry: an unknown type or a payload its schema refuses is turned away
 * here, at enqueue time, with nothing written, instead of failing later at run time.
 */
import type { LeaseholdConfig } from '../config.js';
import { FlowsUnsupportedError, ValidationError, type InputProblem } from '../errors.js';
import type { FlowInput, FlowNode } from '../flow-inputs.js';
import type { EnqueueResult } from '../store/enqueue.js';
import type { FlowResult } from '../store/flow-enqueue.js';
import type { EnqueueInput } from '../task-inputs.js';
import type { TaskCommands } from '../store/ports.js';
import type { TaskRegistry } from './registry.js';
import { checkTask } from './task-checks.js';

/** A flow as the submitter takes it: the store's input (flow-inputs.ts), its tree typed. */
export type FlowSubmission = Omit<FlowInput, 'root'> & { root: FlowNode };

/** The most problems one refused flow lists (a flow holds up to 1,000 tasks); the rest are counted. */
const MAX_FLOW_PROBLEMS = 100;

export class TaskSubmitter {
  constructor(
    private readonly store: Pick<TaskCommands, 'enqueue' | 'enqueueFlow'>,
    readonly registry: TaskRegistry,
    private readonly config: Pick<LeaseholdConfig, 'maxExecutionMs'>,
  ) {}

  async enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    const { task, problems } = checkTask(this.registry, this.config, input);
    if (problems.length > 0) throw new ValidationError('enqueue', problems);
    // The stored payload is the one given: the handler's schema parses it again (with its transforms) at run time.
    return this.store.enqueue(task);
  }

  /**
   * A flow (POST /flows): every task of it checked as `enqueue` checks one (a registered type, its
   * payload against the type's schema, a missing payload as the null the worker would hand it, its
   * timeout against the type's) before any is written; then the store writes it (flow-enqueue.ts).
   * A refused task is named by its path in the body of POST /flows: `children.3.task.payload.n` for
   * the task of a child with children, `children.2.type` for a child without.
   */
  async enqueueFlow(input: FlowSubmission): Promise<FlowResult> {
    if (!this.store.enqueueFlow) throw new FlowsUnsupportedError();
    const problems: InputProblem[] = [];
    const root = this.checkNode(input.root, '', true, problems);
    if (problems.length > 0) {
      const listed = problems.slice(0, MAX_FLOW_PROBLEMS);
      if (problems.length > listed.length)
        listed.push({
          path: 'children',
          message: `has ${problems.length - listed.length} more problems like these, not listed`,
        });
      throw new ValidationError('enqueueFlow', listed);
    }
    return this.store.enqueueFlow({ ...input, root });
  }

  /** `node` with each task's type default for maxAttempts filled in; its problems, under `path`, in `problems`. */
  private checkNode(node: FlowNode, path: string, root: boolean, problems: InputProblem[]): FlowNode {
    const children = Array.isArray(node?.children) ? node.children : [];
    // The root and a child with children are `{task, children}` in the body; a child without, the task itself.
    const at = root || node?.children !== undefined ? `${path}task.` : path;
    const task = node?.task ?? { type: '' };
    const { task: checked, problems: found } = checkTask(
      this.registry,
      this.config,
      task,
      task.payload ?? null,
    );
    problems.push(...found.map((p) => ({ ...p, path: `${at}${p.path}` })));
    return {
      task: checked,
      ...(node?.children === undefined
        ? {}
        : {
            children: children.map((child, i) =>
              this.checkNode(child, `${path}children.${i}.`, false, problems),
            ),
          }),
    };
  }
}
