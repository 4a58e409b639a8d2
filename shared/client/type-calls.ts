/** The client's task-type calls: GET /types, POST /types/{type}/pause and /resume (an operator's grant in AWS). */
import { typeControlAnswerSchema, typesAnswerSchema } from '../api/response-schemas.js';
import { decodeAnswer } from './answers.js';
import type { TypeClient } from './client-types.js';
import type { Transport } from './http-transport.js';

export function typeCalls(transport: Transport): TypeClient {
  // Pause and resume are idempotent: sent again after a lost answer, they answer the same.
  const setPaused = async (type: string, action: 'pause' | 'resume') => {
    const route = `POST /types/{type}/${action}`;
    const answer = await transport({
      method: 'POST',
      route,
      path: `types/${encodeURIComponent(type)}/${action}`,
    });
    return decodeAnswer(answer, typeControlAnswerSchema, route);
  };
  return {
    async list() {
      const route = 'GET /types';
      return decodeAnswer(await transport({ method: 'GET', route, path: 'types' }), typesAnswerSchema, route);
    },
    pause: (type) => setPaused(type, 'pause'),
    resume: (type) => setPaused(type, 'resume'),
  };
}
