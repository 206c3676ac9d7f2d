/**
 * One HTTP/1.1 exchange on a raw socket, for requests no client library would send: writes the bytes
 * as given and reads one final answer, framed the way the server framed it (Content-Length, chunked,
 * or until close), so the fuzzer knows at once when the answer is complete instead of waiting out a timer.
 */
import { connect } from 'node:net';

/**
 * What came back:
 * - `answer`: a final (non-1xx) status line and headers arrived; `complete` tells whether the whole body did.
 * - `closed`: the server closed the connection before any final answer.
 * - `silent`: nothing final arrived within the wait, and the connection was still open.
 */
export type WireOutcome =
  | {
      readonly kind: 'answer';
      readonly status: number;
      readonly headers: Readonly<Record<string, string>>;
      readonly body: Buffer;
      readonly complete: boolean;
      readonly ms: number;
    }
  | { readonly kind: 'closed'; readonly ms: number }
  | { readonly kind: 'silent'; readonly ms: number };

export interface ExchangeOptions {
  /** The request was HEAD: the answer has headers only, whatever Content-Length says. */
  readonly head: boolean;
  /** How long to wait for a complete answer. Milliseconds. */
  readonly waitMs: number;
  /** Half-close the socket after writing (the client goes away mid-request). */
  readonly halfClose: boolean;
}

interface ParsedHead {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** Offset of the first body byte in the received buffer. */
  readonly bodyStart: number;
}

const HEAD_END = Buffer.from('\r\n\r\n');

/** Parses the head starting at `from`; undefined while it has not fully arrived. */
function parseHead(data: Buffer, from: number): ParsedHead | undefined {
  const end = data.indexOf(HEAD_END, from);
  if (end < 0) return undefined;
  const lines = data.subarray(from, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/\d\.\d (\d{3})/.exec(lines[0] ?? '');
  if (m === null) return { status: 0, headers: {}, bodyStart: end + 4 };
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  return { status: Number(m[1]), headers, bodyStart: end + 4 };
}

/** Decodes a chunked body; undefined while the last chunk has not arrived. */
function dechunk(data: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) return Buffer.concat(parts); // not chunked after all: take what is there
    if (size === 0)
      return data.indexOf(HEAD_END, lineEnd) >= 0 || data.length >= lineEnd + 4 ? Buffer.concat(parts) : undefined;
    if (data.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/** The final answer in `data`, if it is all there (interim 1xx answers skipped). */
function finalAnswer(data: Buffer, head: boolean): { parsed: ParsedHead; body: Buffer | undefined } | undefined {
  let from = 0;
  for (;;) {
    const parsed = parseHead(data, from);
    if (parsed === undefined) return undefined;
    if (parsed.status >= 100 && parsed.status < 200 && parsed.status !== 101) {
      from = parsed.bodyStart;
      continue;
    }
    const rest = data.subarray(parsed.bodyStart);
    if (head || parsed.status === 204 || parsed.status === 304 || parsed.status === 101)
      return { parsed, body: Buffer.alloc(0) };
    const length = parsed.headers['content-length'];
    if (length !== undefined)
      return { parsed, body: rest.length >= Number(length) ? rest.subarray(0, Number(length)) : undefined };
    if (/chunked/i.test(parsed.headers['transfer-encoding'] ?? '')) return { parsed, body: dechunk(rest) };
    return { parsed, body: undefined }; // framed by close
  }
}

/** Writes `request` to 127.0.0.1:`port` and waits for one final answer (see WireOutcome). Never rejects. */
export function exchange(port: number, request: Buffer, opts: ExchangeOptions): Promise<WireOutcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const ms = Date.now() - started;
      const found = finalAnswer(data, opts.head);
      if (found === undefined) {
        resolve(closed ? { kind: 'closed', ms } : { kind: 'silent', ms });
        return;
      }
      // A body framed by the close is complete when the connection closes; a declared length or
      // chunking that the close cut short is not.
      const framedByClose =
        found.parsed.headers['content-length'] === undefined &&
        !/chunked/i.test(found.parsed.headers['transfer-encoding'] ?? '');
      const complete = found.body !== undefined || (closed && framedByClose);
      const body = found.body ?? data.subarray(found.parsed.bodyStart);
      resolve({ kind: 'answer', status: found.parsed.status, headers: found.parsed.headers, body, complete, ms });
    };
    const timer = setTimeout(() => finish(false), opts.waitMs);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const found = finalAnswer(data, opts.head);
      if (found?.body !== undefined) finish(false);
    });
    socket.on('close', () => finish(true));
    // A reset (the server refused the rest of an upload) counts as a close; what arrived is kept.
    socket.on('error', () => undefined);
    if (opts.halfClose) socket.end(request);
    else socket.write(request);
  });
}
