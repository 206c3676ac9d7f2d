/** GET /health: liveness only; touches no database. */
import type { FastifyInstance } from 'fastify';

const HEALTHY = '{"ok":true}';

export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/health', async (_req, reply) => {
    reply.type('application/json').send(HEALTHY);
  });
}
