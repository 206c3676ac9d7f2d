/** HTTP requests fetch cannot make: hand-written bytes on a raw socket, headers fetch refuses (Host), and the HMAC signature header. */
import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';

/** The `x-svc-signature` value of `body`: hex HMAC-SHA256 under the flow's secret. */
export function sign(secret: string, body: string | Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

export interface RawResponse {
  status: number;
  head: string;
  body: string;
  /** Everything received, interim answers included. */
  raw: string;
  /** True when the server closed the connection before the wait ended. */
  closed: boolean;
}

/**
 * Writes `request` (the head, and any body bytes given) on a raw TCP socket and collects the answer
 * until the server closes or `waitMs` passes. The body announced by Content-Length need not follow.
 */
export function rawRequest(
  port: number,
  request: string,
  opts: { waitMs?: number; untilClose?: boolean; afterContinue?: string } = {},
): Promise<RawResponse> {
  const { waitMs = 2000, untilClose = false, afterContinue } = opts;
  return new Promise((resolvePromise, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    let closed = false;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      // Skip interim 1xx answers.
      const final = data.replace(/^(HTTP\/1\.1 1\d\d[^\r]*\r\n(?:[^\r]+\r\n)*\r\n)+/, '');
      const split = final.indexOf('\r\n\r\n');
      const head = split < 0 ? final : final.slice(0, split);
      const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
      if (!m) {
        reject(new Error(`no HTTP answer: ${JSON.stringify(data)}`));
        return;
      }
      resolvePromise({ status: Number(m[1]), head, body: split < 0 ? '' : final.slice(split + 4), raw: data, closed });
    };
    const timer = setTimeout(finish, waitMs);
    let continued = false;
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      data += d;
      if (afterContinue !== undefined && !continued && /^HTTP\/1\.1 100 /.test(data) && data.includes('\r\n\r\n')) {
        continued = true;
        socket.write(afterContinue);
      }
      if (untilClose) return;
      // A complete final answer with a Content-Length: stop early.
      const final = data.replace(/^(HTTP\/1\.1 1\d\d[^\r]*\r\n(?:[^\r]+\r\n)*\r\n)+/, '');
      const split = final.indexOf('\r\n\r\n');
      if (split >= 0 && /^HTTP\/1\.1 [2-5]/.test(final)) {
        const len = /content-length: (\d+)/i.exec(final.slice(0, split));
        if (len && final.length - split - 4 >= Number(len[1])) finish();
      }
    });
    socket.on('end', () => {
      closed = true;
      finish();
    });
    socket.on('error', () => finish());
    socket.write(request);
  });
}

export interface TrickledResponse extends RawResponse {
  /** Milliseconds from connecting to the first byte of the answer (undefined: no answer). */
  readonly answeredAfterMs: number | undefined;
  /** Milliseconds from connecting to the server ending the connection (undefined: it did not in time). */
  readonly closedAfterMs: number | undefined;
}

/**
 * A slow client: writes `head` at once, then `body` one byte every `everyMs` (stopping when the
 * server ends the connection), and collects the answer until the server closes or `waitMs` passes.
 */
export function trickleRequest(
  port: number,
  head: string,
  body: string,
  opts: { everyMs: number; waitMs: number },
): Promise<TrickledResponse> {
  return new Promise((resolvePromise, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let data = '';
    let answeredAfterMs: number | undefined;
    let closedAfterMs: number | undefined;
    let sent = 0;
    const dripper = setInterval(() => {
      if (sent >= body.length || socket.destroyed || closedAfterMs !== undefined) return;
      socket.write(body[sent++]!);
    }, opts.everyMs);
    const finish = () => {
      clearInterval(dripper);
      clearTimeout(timer);
      socket.destroy();
      const split = data.indexOf('\r\n\r\n');
      const headText = split < 0 ? data : data.slice(0, split);
      const m = /^HTTP\/1\.1 (\d{3})/.exec(headText);
      if (!m) {
        reject(new Error(`no HTTP answer after ${Date.now() - started} ms: ${JSON.stringify(data)}`));
        return;
      }
      resolvePromise({
        status: Number(m[1]),
        head: headText,
        body: split < 0 ? '' : data.slice(split + 4),
        raw: data,
        closed: closedAfterMs !== undefined,
        answeredAfterMs,
        closedAfterMs,
      });
    };
    const timer = setTimeout(finish, opts.waitMs);
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      answeredAfterMs ??= Date.now() - started;
      data += d;
    });
    socket.on('end', () => {
      closedAfterMs = Date.now() - started;
      finish();
    });
    socket.on('error', () => {
      closedAfterMs ??= Date.now() - started;
      finish();
    });
    socket.write(head);
  });
}

export interface HeadersResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** A request through node:http, for headers fetch refuses to send (Host); the answer's headers as node:http gives them. */
export function requestWithHeaders(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<HeadersResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: opts.method ?? 'GET', headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}
