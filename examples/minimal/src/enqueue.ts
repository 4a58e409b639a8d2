/**
 * Enqueue from your own code (a Lambda of yours, a script), typed by the task's definition: the
 * payload is checked against its schema, and the result comes back typed. Signed with SigV4 from the
 * default AWS credential chain; the caller needs execute-api:Invoke (the construct's grantEnqueue and
 * grantRead give it).
 */
import { createClient } from 'leasehold/client';
import { taskDefinitions } from './tasks.js';

const [hello] = taskDefinitions;

export async function greet(url: string, name: string): Promise<string> {
  const client = createClient({ url });
  const { task } = await client.enqueue(hello, { name });
  const done = await client.waitFor(task.id, { timeout: 120_000 });
  if (done.status !== 'SUCCESS' || !done.result) throw new Error(`greetings.hello ended ${done.status}`);
  return done.result.greeting;
}
