/**
 * `GET /metrics`: the Prometheus text exposition, public like `/health` (no gate), on the main port
 * when `svc serve --metrics` is given, or alone on its own listener with `--metrics-port`.
 */
import type { FastifyInstance } from 'fastify';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricsExposition } from './observer.js';

export function metricsRoutes(exposition: MetricsExposition) {
  return async function register(app: FastifyInstance): Promise<void> {
    app.get('/metrics', async (_req, reply) => {
      const { contentType, body } = await exposition.render();
      return reply.code(200).header('content-type', contentType).header('cache-control', 'no-store').send(body);
    });
  };
}

/** A listener of its own answering `GET /metrics` only (404 for anything else). */
export interface MetricsListener {
  readonly address: string;
  close(): Promise<void>;
}

export async function startMetricsListener(
  host: string,
  port: number,
  exposition: MetricsExposition,
  onError: (err: unknown) => void,
): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?', 1)[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"ok":false,"error":"not found"}');
      return;
    }
    exposition.render().then(
      ({ contentType, body }) =>
        res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(body),
      (err: unknown) => {
        onError(err);
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"ok":false,"error":"internal error"}');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const shown = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    address: `http://${shown}:${addr.port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
