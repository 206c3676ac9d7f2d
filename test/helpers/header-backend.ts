/** A loopback HTTP backend for `http_egress` steps that records each call's request headers, keyed by the `x-case` header. */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from './wait.js';

export interface HeaderBackend {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The headers of every call whose `x-case` was `key`, in arrival order. */
  calls(key: string): IncomingHttpHeaders[];
  /** Waits until `count` calls with `x-case: key` arrived and returns them. */
  waitForCalls(key: string, count?: number): Promise<IncomingHttpHeaders[]>;
  close(): Promise<void>;
}

export interface HeaderBackendOptions {
  /** Cases whose first call is answered 503 (the queue then retries it). @default none */
  failFirstCall?: (key: string) => boolean;
}

/** A step that calls the backend with `x-case: <correlation id>` (front matter needs `effects: [http_egress]` and BACKEND_URL set). */
export const RECORDED_CALL_STEP =
  '## Step: call\neffects: [http_egress]\nendpoint: ${BACKEND_URL}/record\nheaders:\n  x-case: "{{ ctx.correlation_id }}"\n';

export async function startHeaderBackend(opts: HeaderBackendOptions = {}): Promise<HeaderBackend> {
  const seen = new Map<string, IncomingHttpHeaders[]>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const key = String(req.headers['x-case']);
      const list = seen.get(key) ?? [];
      list.push(req.headers);
      seen.set(key, list);
      if (list.length === 1 && opts.failFirstCall?.(key))
        return void res.writeHead(503, { 'content-type': 'text/plain' }).end('first call refused');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const calls = (key: string) => seen.get(key) ?? [];
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    waitForCalls: (key, count = 1) =>
      waitFor(`${count} backend call(s) for ${key}`, () => calls(key).length >= count && calls(key)),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
