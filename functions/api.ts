/** Lambda entry point for the HTTP API (API Gateway HTTP API, payload format 2.0, IAM authorization). */
import { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEventV2WithIAMAuthorizer } from 'aws-lambda';
import { handleApiEvent } from '../shared/api/api-handler.js';
import { createLeasehold } from '../shared/app.js';
import { loadConfig } from '../shared/config.js';
import { taskDefinitions } from '../tasks/catalog.js';

// Parsed once per execution environment; the task catalog is the application's content.
const app = createLeasehold(loadConfig(process.env), taskDefinitions);
const logger = new Logger({ serviceName: 'leasehold-api' });

export const handler = (event: APIGatewayProxyEventV2WithIAMAuthorizer) =>
  handleApiEvent(event, { ...app, logger });
