/**
 * The API handler on the request-only store the API Lambda runs (createRequestLeasehold), with a whole
 * store beside it as the worker and recovery (createLeasehold), on one fresh table and a manual clock.
 * `call` sends one API Gateway event and checks the exchange against the OpenAPI document.
 */
import { API_ROUTES, handleApiEvent } from '../../shared/api/api-handler.js';
import { openApiDocument } from '../../shared/api/openapi.js';
import { createLeasehold } from '../../shared/app.js';
import { createRequestLeasehold } from '../../shared/request-app.js';
import { taskDefinitions } from '../../tasks/catalog.js';
import { apiEvent, type EventSpec } from './api-events.js';
import { OpenApiConformance, exchangeOf } from './openapi-conformance.js';
import { createTestStore } from './test-store.js';
import { silentLogger } from './worker-world.js';

/** The exchanges this test file's worlds sent, checked against the document (`seen`: the operations they reached). */
export const conformance = new OpenApiConformance(openApiDocument(API_ROUTES));

export async function createApiWorld(endpoint: string) {
  const t = await createTestStore(endpoint);
  const app = createLeasehold(t.config, taskDefinitions, { doc: t.doc, clock: t.clock });
  const api = createRequestLeasehold(t.config, taskDefinitions, { doc: t.doc, clock: t.clock });
  const deps = { ...api, logger: silentLogger() };
  const call = async (spec: EventSpec) => {
    const event = apiEvent(spec);
    const res = await handleApiEvent(event, deps);
    conformance.assertConforms(exchangeOf(event, res));
    return { status: res.statusCode, body: JSON.parse(res.body) as Record<string, any> };
  };
  return { ...t, app, call };
}
