/**
 * Actions the stack grants that a routine run of the functions does not exercise, each with the reason
 * it is granted. The sim's IAM audit (test/sim) fails on any granted action its run neither used nor
 * finds here, so a grant cannot outlive its use unnoticed. Keys: `<role>:<action>`, where <role> is the
 * role's construct name as it appears in its physical name (WorkerRole, ApiRole, ...) or `*` for every role.
 */
export const GRANTS_WITHOUT_ROUTINE_USE: Record<string, string> = {
  '*:logs:CreateLogStream':
    "Lambda writes each function's logs with the function's role (the sim keeps logs in files)",
  '*:logs:PutLogEvents':
    "Lambda writes each function's logs with the function's role (the sim keeps logs in files)",
  '*:sqs:SendMessage':
    'dead letters: Scheduler sends a tick it could not deliver, Lambda a fire it gave up on; used only when something fails',
  '*:sqs:GetQueueAttributes':
    "CDK's grant for a Lambda on-failure destination; Lambda checks the queue with it when the destination is configured",
  '*:sqs:GetQueueUrl':
    "CDK's grant for a Lambda on-failure destination; Lambda checks the queue with it when the destination is configured",
  'WorkerRole:lambda:InvokeFunction':
    'a worker whose claim rounds fill every slot starts another invocation (scale with the backlog): used only under a backlog',
  'RecoveryRole:lambda:InvokeFunction':
    "a sweep that readied tasks (a dead holder's requeued, a delayed one promoted while no timekeeper ran) starts a worker for them: used only when a worker died or a delayed task fell due unwatched",
  'WorkerRole:dynamodb:GetItem':
    "the scheduled tick's read of the queue summary (shared/store/queue-summary.ts; a sim run shorter than a recovery interval may not reach it), a payload larger than 128 bytes read when its task is claimed (test/store-task-body.test.ts), the consistent read-back after a write whose answer was lost, and reading a dead holder's task when taking over its concurrency slot (the chaos harness exercises these)",
  'RecoveryRole:dynamodb:GetItem':
    "the consistent read-back of a write whose answer was lost or that was refused: a child's end counted on its parent (shared/store/child-ends.ts), a parent's readiness (test/store-flows-lost-answers.test.ts exercises them); a routine sweep's writes are answered",
};

/** Whether a grant of `action` to the role named `roleName` has a reason written here. */
export function grantHasReason(roleName: string, action: string): boolean {
  return Object.keys(GRANTS_WITHOUT_ROUTINE_USE).some((key) => {
    const role = key.slice(0, key.indexOf(':'));
    return key.slice(role.length + 1) === action && (role === '*' || roleName.includes(`-${role}`));
  });
}
