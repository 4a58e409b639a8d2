/** dynalite in its own process (`leasehold dynamodb`), so the server and the measured client do not share one event loop. */
import { startNodeProcess } from '../test/support/node-process.js';

export interface DynaliteProcess {
  endpoint: string;
  close(): Promise<void>;
}

const LISTENING = /dynalite listening on (http:\/\/\S+)/;

export async function startDynaliteProcess(): Promise<DynaliteProcess> {
  const server = await startNodeProcess(
    ['--import', 'tsx', 'tools/cli/leasehold.ts', 'dynamodb', '--port', '0'],
    { env: process.env, ready: LISTENING, what: 'dynalite' },
  );
  return {
    endpoint: LISTENING.exec(server.output())![1]!,
    close: async () => {
      server.child.kill('SIGTERM');
      await server.exited;
    },
  };
}
