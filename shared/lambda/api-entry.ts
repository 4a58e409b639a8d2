/**
 * The HTTP API Lambda's handler (API Gateway HTTP API, payload format 2.0, IAM authorization) for a set
 * of task types. Call it once, at module level.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEventV2WithIAMAuthorizer, Context } from 'aws-lambda';
import { ANSWER_MARGIN_MS, deadlineAnswer, settleWithin } from '../api/answer-deadline.js';
import { handleApiEvent } from '../api/api-handler.js';
import { openApiFile, openApiPath } from '../api/openapi-file.js';
import { createRequestLeasehold } from '../request-app.js';
import { loadConfig } from '../config.js';
import { lambdaKicker } from '../fleet/lambda-kicker.js';
import { TUNING } from '../tuning.js';
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

  const handler = async (
    event: APIGatewayProxyEventV2WithIAMAuthorizer,
    context?: Pick<Context, 'getRemainingTimeInMillis'>,
  ) => {
    // Answered before the function's timeout, which API Gateway would answer 500 (answer-deadline.ts).
    const endsAt = context
      ? app.clock.now() + context.getRemainingTimeInMillis() - ANSWER_MARGIN_MS
      : undefined;
    const left = () => (endsAt === undefined ? undefined : endsAt - app.clock.now());
    const response = await settleWithin(handleApiEvent(event, { ...app, logger, openApi }), left(), () => {
      logger.warn('request answered 504 DEADLINE: it ran out of time', { path: event.rawPath });
      return deadlineAnswer();
    });
    // Sent before the return: Lambda freezes the process after it. The kick's own bounded wait, cut to
    // the time left: a kick dropped for it is made up by the minute's tick.
    await kicker?.settled(Math.min(TUNING.kick.answerWaitMs, left() ?? TUNING.kick.answerWaitMs));
    return response;
  };
  return handler;
}
