/** This app's task types: the construct bundles this module into the worker, the API and the rest. */
import * as z from 'zod';
import { defineTask } from 'leasehold';

export const taskDefinitions = [
  defineTask({
    name: 'greetings.hello',
    schema: z.object({ name: z.string().min(1).max(100) }).strict(),
    handler: async ({ name }, ctx) => {
      ctx.logger.info('greeting', { name });
      return { greeting: `Hello, ${name}` };
    },
  }),
];
