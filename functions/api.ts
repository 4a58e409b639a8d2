/** Lambda entry point for the HTTP API (API Gateway HTTP API, payload format 2.0, IAM authorization). */
import { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEventV2WithIAMAuthorizer } from 'aws-lambda';
import { handleApiEvent } from '../shared/api/api-handler.js';
import { createRequestLeasehold } from '../shared/request-app.js';
import { loadConfig } from '../shared/config.js';
import { lambdaKicker } from '../shared/fleet/lambda-kicker.js';
import { writeTargetOf } from '../shared/store/context.js';
import { openApiFile, openApiPath } from '../shared/api/openapi-file.js';
import { taskDefinitions } from '../tasks/catalog.js';

// Parsed once per execution environment; the task catalog is the application's content.
const app = createRequestLeasehold(loadConfig(process.env), taskDefinitions);
const logger = new Logger({ serviceName: 'leasehold-api' });
// Starts a worker when a task arrives (coalesced), instead of leaving it for the next minute's tick.
const kicker = lambdaKicker(app.config, app.events, app.clock, logger, writeTargetOf(app.store.ctx));
// The generated document, copied next to the bundle (the generator itself is not bundled).
const openApi = openApiFile(openApiPath(process.env));

export const handler = async (event: APIGatewayProxyEventV2WithIAMAuthorizer) => {
  const response = await handleApiEvent(event, { ...app, logger, openApi });
  // Sent before the return: Lambda freezes the process after it.
  await kicker?.settled();
  return response;
};
