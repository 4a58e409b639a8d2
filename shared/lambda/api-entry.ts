/**
 * The HTTP API Lambda's handler (API Gateway HTTP API, payload format 2.0, IAM authorization) for a set
 * of task types. Call it once, at module level.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEventV2WithIAMAuthorizer } from 'aws-lambda';
import { handleApiEvent } from '../api/api-handler.js';
import { openApiFile, openApiPath } from '../api/openapi-file.js';
import { createRequestLeasehold } from '../request-app.js';
import { loadConfig } from '../config.js';
import { lambdaKicker } from '../fleet/lambda-kicker.js';
import { writeTargetOf } from '../store/context.js';
import { claimableTypesOn } from '../worker/paused-types.js';
import type { TaskDefinition } from '../tasks/define.js';

export function createApiHandler(taskDefinitions: TaskDefinition[]) {
  // Parsed once per execution environment; the task catalog is the application's content.
  const app = createRequestLeasehold(loadConfig(process.env), taskDefinitions);
  const logger = new Logger({ serviceName: 'leasehold-api' });
  // Starts a worker when a task arrives (coalesced), instead of leaving it for the next minute's tick.
  // A kick only for tasks of paused types starts nothing (the pauses read at most once a poll interval).
  const kicker = lambdaKicker(app.config, app.events, app.clock, logger, writeTargetOf(app.store.ctx), {
    readSeats: true,
    claimable: claimableTypesOn(app.store.ctx, app.config.pollIntervalMs),
  });
  // The generated document, copied next to the bundle by the construct (the generator is not bundled).
  const openApi = openApiFile(openApiPath(process.env));

  const handler = async (event: APIGatewayProxyEventV2WithIAMAuthorizer) => {
    const response = await handleApiEvent(event, { ...app, logger, openApi });
    // Sent before the return: Lambda freezes the process after it.
    await kicker?.settled();
    return response;
  };
  return handler;
}
