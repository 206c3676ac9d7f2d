/** GET /openapi.json: the OpenAPI 3.1 document of this door; public, like /health, and cacheable. */
import type { FastifyInstance } from 'fastify';
import { OPENAPI_BYTES, OPENAPI_ETAG } from './openapi/document.js';

/**
 * The document changes only with the service version, so a client may keep it a while and then
 * revalidate with If-None-Match (a 304 costs no body). Five minutes bounds how long a client sees
 * the previous version's document after an upgrade.
 */
const CACHE_CONTROL = 'public, max-age=300';

/** True when an If-None-Match value names our ETag (a list, `*`, or a weak form all count). */
function matches(ifNoneMatch: string | undefined): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === OPENAPI_ETAG;
  });
}

export async function openApiRoutes(app: FastifyInstance): Promise<void> {
  app.get('/openapi.json', async (req, reply) => {
    reply.header('etag', OPENAPI_ETAG).header('cache-control', CACHE_CONTROL);
    if (matches(req.headers['if-none-match'])) return reply.code(304).send();
    // A Buffer keeps the content type exact (Fastify adds a charset to a JSON string).
    return reply.code(200).header('content-type', 'application/json').send(OPENAPI_BYTES);
  });
}
