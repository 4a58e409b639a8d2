/** PLACEHOLDER (helper A replaces): the OpenAPI 3.1 document of the API, generated from its zod schemas. */
export function openApiDocument(
  routes: readonly { method: string; path: string }[],
): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: { title: 'Leasehold', version: '0' },
    paths: Object.fromEntries(routes.map((r) => [r.path, {}])),
  };
}
