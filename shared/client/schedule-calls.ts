/** The client's schedule calls: /schedules over the transport, each answer read through its schema. */
import { firesAnswerSchema, scheduleAnswerSchema, schedulePageSchema } from '../api/response-schemas.js';
import { answerError, decodeAnswer } from './answers.js';
import type { ScheduleClient } from './client-types.js';
import type { Transport } from './http-transport.js';
import { deletedByThisCall } from './lost-answers.js';
import { eachItemOfPages } from './pages.js';

const path = (name: string, rest = '') => `schedules/${encodeURIComponent(name)}${rest}`;

export function scheduleCalls(transport: Transport): ScheduleClient {
  return {
    async put(name, schedule) {
      const route = 'PUT /schedules/{name}';
      const answer = await transport({ method: 'PUT', route, path: path(name), body: schedule });
      const { schedule: saved } = decodeAnswer(answer, scheduleAnswerSchema, route);
      return { schedule: saved, created: answer.status === 201 };
    },
    async get(name) {
      const route = 'GET /schedules/{name}';
      const answer = await transport({ method: 'GET', route, path: path(name) });
      return decodeAnswer(answer, scheduleAnswerSchema, route).schedule;
    },
    list(options = {}) {
      const route = 'GET /schedules';
      return eachItemOfPages(async (cursor) => {
        const answer = await transport({
          method: 'GET',
          route,
          path: 'schedules',
          query: { limit: options.pageSize, cursor },
        });
        const page = decodeAnswer(answer, schedulePageSchema, route);
        return { items: page.schedules, nextCursor: page.nextCursor };
      });
    },
    async delete(name) {
      const route = 'DELETE /schedules/{name}';
      const answer = await transport({ method: 'DELETE', route, path: path(name) });
      if (answer.status >= 200 && answer.status <= 299) return;
      if (deletedByThisCall(answer.status, answer.earlierAttemptMayHaveLanded)) return;
      throw answerError(answer);
    },
    async fires(name, options = {}) {
      const route = 'GET /schedules/{name}/fires';
      const answer = await transport({
        method: 'GET',
        route,
        path: path(name, '/fires'),
        query: { limit: options.limit },
      });
      return decodeAnswer(answer, firesAnswerSchema, route);
    },
  };
}
