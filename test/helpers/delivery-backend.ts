/** A loopback HTTP backend for `http_egress` steps that counts each correlation id's deliveries: an observer outside the service's own storage. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface DeliveryBackendOptions {
  /** Which ids get 503 on their first call, so each of them is retried once (its retry is written to the consumer log). @default none */
  failFirstCall?: (id: string) => boolean;
}

export interface DeliveryBackend {
  /** `http://127.0.0.1:<port>`; a flow's step calls `${BACKEND_URL}/deliver` with header `x-delivered: <id>`. */
  readonly url: string;
  /** Successful deliveries (answered 200) per id. */
  readonly delivered: ReadonlyMap<string, number>;
  /** Calls per id, refused ones included. */
  readonly called: ReadonlyMap<string, number>;
  /** Each id once, in the order of its first successful delivery. */
  readonly firstDelivered: readonly string[];
  /** Every call received, failed ones included. */
  calls(): number;
  close(): Promise<void>;
}

/** The step a flow uses to report its delivery (front matter needs `effects: [http_egress]`). */
export const DELIVER_STEP =
  '## Step: deliver\neffects: [http_egress]\nendpoint: ${BACKEND_URL}/deliver\nheaders:\n  x-delivered: "{{ ctx.correlation_id }}"\n';

export async function startDeliveryBackend(opts: DeliveryBackendOptions = {}): Promise<DeliveryBackend> {
  const seen = new Map<string, number>();
  const delivered = new Map<string, number>();
  const firstDelivered: string[] = [];
  let calls = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      calls++;
      const id = String(req.headers['x-delivered']);
      const n = (seen.get(id) ?? 0) + 1;
      seen.set(id, n);
      if (n === 1 && opts.failFirstCall?.(id))
        return void res.writeHead(503, { 'content-type': 'text/plain' }).end('first call refused');
      if (!delivered.has(id)) firstDelivered.push(id);
      delivered.set(id, (delivered.get(id) ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    delivered,
    called: seen,
    firstDelivered,
    calls: () => calls,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
