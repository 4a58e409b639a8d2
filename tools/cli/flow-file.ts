/**
 * `leasehold flow FILE.json`: the file is the JSON body of POST /flows (`{task, children,
 * idempotencyKey?}`), sent as it is through client.enqueueFlow; the API judges it (types, payloads,
 * limits) and names a refused field by its path. The answer is printed as the tree of the flow's ids,
 * each with its task type.
 */
import { readFile } from 'node:fs/promises';
import type { Flow, FlowIds } from '../../shared/client/client-types.js';
import { UsageError } from './usage-error.js';

/** The file's flow; a UsageError when it cannot be read or is not a JSON object. */
export async function readFlowFile(path: string): Promise<Flow> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${path} (${(error as Error).message})`);
  }
  let flow: unknown;
  try {
    flow = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${path} is not JSON (${(error as Error).message})`);
  }
  if (typeof flow !== 'object' || flow === null || Array.isArray(flow))
    throw new UsageError(
      `${path} must hold one JSON object, the body of POST /flows: {"task": {"type": ...}, "children": [...]}`,
    );
  return flow as Flow;
}

/** Each id of the flow on its own line, indented under its parent, with the task type the file gave it. */
export function flowIdsText(flow: Flow, ids: FlowIds): string {
  const lines: string[] = [];
  const walk = (node: unknown, nodeIds: FlowIds, depth: number) => {
    const record = (node ?? {}) as { type?: unknown; task?: { type?: unknown }; children?: unknown[] };
    // The root and a child with children are {task, children}; a child without, the task itself.
    const type = record.task !== undefined ? record.task?.type : record.type;
    lines.push(`${'  '.repeat(depth)}${nodeIds.id}  ${typeof type === 'string' ? type : '?'}`);
    nodeIds.children?.forEach((childIds, i) => walk(record.children?.[i], childIds, depth + 1));
  };
  walk(flow, ids, 0);
  return lines.join('\n');
}

/** How many tasks the ids name, the root counted. */
export function flowTaskCount(ids: FlowIds): number {
  return 1 + (ids.children ?? []).reduce((sum, child) => sum + flowTaskCount(child), 0);
}
