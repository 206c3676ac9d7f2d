/** Builds the Fastify app (not yet listening). Each route area is an encapsulated plugin. */
import Fastify, { type FastifyInstance } from 'fastify';
import { healthRoutes } from './health.js';

export interface HttpDeps {
  /** Gate off: `--no-auth`. */
  readonly noAuth: boolean;
}

export async function buildServer(deps: HttpDeps): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, disableRequestLogging: true, return503OnClosing: true });
  await app.register(healthRoutes);
  void deps;
  return app;
}
