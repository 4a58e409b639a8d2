/**
 * The local HTTP bridge used to read request bodies in a promise nobody awaited; a client
 * that disconnected mid-body made that promise reject unhandled, and Node 20 exits on that. The
 * bridge must shrug such a client off and keep answering. Likewise a path that is no URL path (`//`)
 * used to throw in the request listener, which ends the process.
 */
import { request } from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveApi, type LocalApiServer } from '../tools/local/http-bridge.js';
import { demoTasks } from '../tasks/demo.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, silentLogger } from './support/worker-world.js';

let server: TestDynamo;
let api: LocalApiServer;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

beforeAll(async () => {
  server = await startTestDynamo();
  const w = await createWorkerWorld(server.endpoint, demoTasks);
  api = await serveApi({ ...w, logger: silentLogger() }, 0);
  process.on('unhandledRejection', onUnhandled);
});
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  await api.close();
  await server.close();
});

/** Sends the head of a POST and part of its body, then drops the connection, as an aborted fetch does. */
async function abortMidBody(): Promise<void> {
  const { port } = new URL(api.url);
  await new Promise<void>((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => {
      socket.write(
        `POST /tasks HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"type":"demo.echo","payload":"`,
      );
      setTimeout(() => {
        socket.destroy();
        resolve();
      }, 50);
    });
    socket.on('error', reject);
  });
  // Let the server notice the reset and settle the request's promise.
  await new Promise((r) => setTimeout(r, 100));
}

describe('the local HTTP bridge and clients that go away', () => {
  it('a client that disconnects mid-body leaves no unhandled rejection; the next requests are answered', async () => {
    for (let i = 0; i < 3; i++) await abortMidBody();
    expect(unhandled).toEqual([]);
    expect((await fetch(`${api.url}/health`)).status).toBe(200);
    const created = await fetch(`${api.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'demo.echo', payload: 1 }),
    });
    expect(created.status).toBe(201);
  });
});

/** GET `path` exactly as given (fetch would normalise `//` away): the status and body. */
function rawGet(path: string): Promise<{ status: number; body: string }> {
  const { port } = new URL(api.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: Number(port), path, method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the local HTTP bridge and paths that are no URL path', () => {
  it.each(['//', '///', '//@'])('GET %s is answered 400, and the bridge keeps answering', async (path) => {
    const answer = await rawGet(path);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'REQUEST_PATH_INVALID' });
    expect((await rawGet('/health')).status).toBe(200);
  });
});
