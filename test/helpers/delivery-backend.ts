/** A loopback HTTP backend for `http_egress` steps that counts each correlation id's deliveries: an observer outside the service's own storage. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface DeliveryBackendOptions {
  /** Which ids get 503 on their first call, so each of them is retried once (its retry is written to the consumer log). @default none */
  failFirstCall?: (id: string) => boolean;
  /** How long each call is held before it is answered (a slow backend: a queue's worker stays busy). Milliseconds. @default 0 */
  holdMs?: number;
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
  /** The most calls in flight at once, in all and per `x-group` header value (see GROUPED_DELIVER_STEP). */
  readonly maxInFlight: { all: number; byGroup: ReadonlyMap<string, number> };
  close(): Promise<void>;
}

/** The step a flow uses to report its delivery (front matter needs `effects: [http_egress]`). */
export const DELIVER_STEP =
  '## Step: deliver\neffects: [http_egress]\nendpoint: ${BACKEND_URL}/deliver\nheaders:\n  x-delivered: "{{ ctx.correlation_id }}"\n';

/** DELIVER_STEP with header `x-group: <group>`: the backend counts the group's calls in flight at once. */
export const groupedDeliverStep = (group: string): string => `${DELIVER_STEP}  x-group: "${group}"\n`;

export async function startDeliveryBackend(opts: DeliveryBackendOptions = {}): Promise<DeliveryBackend> {
  const seen = new Map<string, number>();
  const delivered = new Map<string, number>();
  const firstDelivered: string[] = [];
  let calls = 0;
  const maxInFlight = { all: 0, byGroup: new Map<string, number>() };
  let inFlight = 0;
  const groupInFlight = new Map<string, number>();
  const server = createServer((req, res) => {
    req.resume();
    const group = req.headers['x-group'] === undefined ? undefined : String(req.headers['x-group']);
    inFlight++;
    maxInFlight.all = Math.max(maxInFlight.all, inFlight);
    if (group !== undefined) {
      const n = (groupInFlight.get(group) ?? 0) + 1;
      groupInFlight.set(group, n);
      maxInFlight.byGroup.set(group, Math.max(maxInFlight.byGroup.get(group) ?? 0, n));
    }
    res.on('close', () => {
      inFlight--;
      if (group !== undefined) groupInFlight.set(group, groupInFlight.get(group)! - 1);
    });
    req.on('end', () => setTimeout(answer, opts.holdMs ?? 0));
    const answer = () => {
      calls++;
      const id = String(req.headers['x-delivered']);
      const n = (seen.get(id) ?? 0) + 1;
      seen.set(id, n);
      if (n === 1 && opts.failFirstCall?.(id))
        return void res.writeHead(503, { 'content-type': 'text/plain' }).end('first call refused');
      if (!delivered.has(id)) firstDelivered.push(id);
      delivered.set(id, (delivered.get(id) ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    };
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    delivered,
    called: seen,
    firstDelivered,
    calls: () => calls,
    maxInFlight,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
