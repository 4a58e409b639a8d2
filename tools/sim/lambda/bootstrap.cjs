'use strict';
/**
 * The sim's runtime client inside each execution environment: what the Lambda Node.js runtime does
 * with the Runtime API (aws-lambda-nodejs-runtime-interface-client): load `_HANDLER` from
 * LAMBDA_TASK_ROOT, then loop on `GET /invocation/next`, call the handler with a context whose
 * getRemainingTimeInMillis() counts down to the invocation's deadline, and post the response or the
 * error. The sim freezes this process (SIGSTOP) while it waits on `next`, as Lambda does.
 * Plain CommonJS so any Node version runs it as is.
 */
const http = require('node:http');
const path = require('node:path');

const [apiHost, apiPort] = String(process.env.AWS_LAMBDA_RUNTIME_API).split(':');
const BASE = '/2018-06-01/runtime';
let currentRequestId;

function call(method, urlPath, body, headers) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: apiHost,
        port: Number(apiPort),
        method,
        path: BASE + urlPath,
        headers: { 'content-type': 'application/json', ...(headers || {}) },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function errorBody(error, fallbackType) {
  const e =
    error instanceof Error ? error : new Error(typeof error === 'string' ? error : JSON.stringify(error));
  return JSON.stringify({
    errorType: (error instanceof Error && e.name) || fallbackType || 'Error',
    errorMessage: e.message,
    trace: String(e.stack || '').split('\n'),
  });
}

function loadHandler() {
  const spec = String(process.env._HANDLER);
  const dot = spec.lastIndexOf('.');
  const file = path.join(String(process.env.LAMBDA_TASK_ROOT), spec.slice(0, dot));
  const name = spec.slice(dot + 1);
  let mod;
  try {
    mod = require(file);
  } catch (error) {
    const e = new Error(`Error: Cannot find module '${spec.slice(0, dot)}'\n${error && error.message}`);
    e.name = 'Runtime.ImportModuleError';
    throw e;
  }
  if (typeof mod[name] !== 'function') {
    const e = new Error(`${spec} is undefined or not exported`);
    e.name = 'Runtime.HandlerNotFound';
    throw e;
  }
  return mod[name];
}

/** Async handlers resolve; callback handlers call back (the runtime supports both). */
function run(handler, event, context) {
  return new Promise((resolve, reject) => {
    const callback = (error, result) => (error ? reject(error) : resolve(result));
    try {
      const out = handler(event, context, callback);
      if (out && typeof out.then === 'function') out.then(resolve, reject);
    } catch (error) {
      reject(error);
    }
  });
}

process.on('uncaughtException', (error) => {
  const id = currentRequestId;
  const post = id
    ? call('POST', `/invocation/${id}/error`, errorBody(error, 'Runtime.UncaughtException'), {
        'lambda-runtime-function-error-type': 'Runtime.UncaughtException',
      })
    : Promise.resolve();
  post.finally(() => process.exit(129));
});
process.on('unhandledRejection', (reason) => {
  const id = currentRequestId;
  const e = new Error(String(reason && reason.message ? reason.message : reason));
  e.name = 'Runtime.UnhandledPromiseRejection';
  const post = id
    ? call('POST', `/invocation/${id}/error`, errorBody(e), { 'lambda-runtime-function-error-type': e.name })
    : Promise.resolve();
  post.finally(() => process.exit(128));
});

async function main() {
  let handler;
  try {
    handler = loadHandler();
  } catch (error) {
    await call('POST', '/init/error', errorBody(error, 'Runtime.ImportModuleError'), {
      'lambda-runtime-function-error-type': error.name,
    });
    process.exit(1);
  }
  for (;;) {
    const next = await call('GET', '/invocation/next');
    const requestId = String(next.headers['lambda-runtime-aws-request-id']);
    const deadline = Number(next.headers['lambda-runtime-deadline-ms']);
    currentRequestId = requestId;
    process.env._X_AMZN_TRACE_ID = String(next.headers['lambda-runtime-trace-id'] || '');
    const context = {
      awsRequestId: requestId,
      invokedFunctionArn: String(next.headers['lambda-runtime-invoked-function-arn']),
      functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
      functionVersion: process.env.AWS_LAMBDA_FUNCTION_VERSION,
      memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
      logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME,
      logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME,
      callbackWaitsForEmptyEventLoop: true,
      getRemainingTimeInMillis: () => deadline - Date.now(),
    };
    let outcome;
    try {
      const result = await run(handler, JSON.parse(next.body), context);
      outcome = call(
        'POST',
        `/invocation/${requestId}/response`,
        JSON.stringify(result === undefined ? null : result),
      );
    } catch (error) {
      outcome = call('POST', `/invocation/${requestId}/error`, errorBody(error), {
        'lambda-runtime-function-error-type': 'Unhandled',
      });
    }
    await outcome;
    currentRequestId = undefined;
  }
}

main().catch((error) => {
  process.stderr.write(`sim runtime client failed: ${error && error.stack}\n`);
  process.exit(1);
});
