/**
 * The request heads the lean front (lean-front.ts) serves itself: a strict, small subset of
 * HTTP/1.1 that covers what clients of POST .../run and .../enqueue send. Anything outside it is
 * not refused here but left to node:http, which then serves the connection for the rest of its
 * life: so this reader never has to decide what an odd request means, only to recognise the plain
 * one. No I/O; table-driven tests in lean-head.test.ts.
 */
import { hotRoute, type HotRoute } from './fast-path.js';

/** A head past this many bytes is node:http's (which answers 431 past its own 16 KiB limit). */
export const LEAN_MAX_HEAD_BYTES = 16 * 1024;

/**
 * The largest declared body the lean front buffers itself. Bodies above it go to node:http, whose
 * readBody streams them under the flow's ceiling: a lean request's body is held whole until it
 * has arrived, so this bounds what one connection can make the process hold for it.
 */
export const LEAN_MAX_BODY_BYTES = 64 * 1024;

/** More header lines than this and the request is node:http's. */
export const LEAN_MAX_HEADERS = 64;

export interface LeanHead {
  readonly url: string;
  readonly route: HotRoute;
  /** Lowercase names (no repeats: a repeated name leaves the request to node:http); a null prototype. */
  readonly headers: Record<string, string>;
  /** Names as sent and values trimmed, alternating, as node:http's `rawHeaders`. */
  readonly rawHeaders: string[];
  /** The declared body length; 0 when no `Content-Length` was sent. */
  readonly contentLength: number;
  /** `Connection: close` was sent: the answer ends the connection. */
  readonly close: boolean;
}

/** RFC 9110's token characters: a header name is one or more of them (read here, written by lean-answer.ts). */
export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What a header value may hold here: tab and visible ASCII with spaces. Anything else is node:http's to judge. */
const PLAIN_VALUE = /^[\t\x20-\x7e]*$/;
/** A request target: visible ASCII, no spaces. */
const PLAIN_TARGET = /^[\x21-\x7e]+$/;
const DIGITS = /^\d{1,9}$/;
const SUFFIX = ' HTTP/1.1';

/**
 * Reads the head in `buf[0, end)` (`end`: where its blank line `\r\n\r\n` starts). Undefined unless
 * it is a POST to a hot route over HTTP/1.1 with plain headers, each name once, a `Host`, a body announced by
 * `Content-Length` alone (no `Transfer-Encoding`) of at most LEAN_MAX_BODY_BYTES, no `Expect`, no
 * `Upgrade`, and `Connection` absent, `keep-alive` or `close`.
 */
export function readLeanHead(buf: Buffer, end: number): LeanHead | undefined {
  if (end > LEAN_MAX_HEAD_BYTES) return undefined;
  const head = buf.toString('latin1', 0, end);
  if (!head.startsWith('POST /flows/')) return undefined;
  let lineEnd = head.indexOf('\r\n');
  if (lineEnd === -1) lineEnd = head.length;
  if (lineEnd < 5 + SUFFIX.length || !head.startsWith(SUFFIX, lineEnd - SUFFIX.length)) return undefined;
  const url = head.slice(5, lineEnd - SUFFIX.length);
  if (!PLAIN_TARGET.test(url)) return undefined;
  const route = hotRoute(url);
  if (route === undefined) return undefined;
  const headers = Object.create(null) as Record<string, string>;
  const rawHeaders: string[] = [];
  let contentLength = 0;
  let close = false;
  let pos = lineEnd + 2;
  while (pos < head.length) {
    let next = head.indexOf('\r\n', pos);
    if (next === -1) next = head.length;
    const colon = head.indexOf(':', pos);
    if (colon === -1 || colon >= next) return undefined;
    const name = head.slice(pos, colon);
    const sent = head.slice(colon + 1, next);
    pos = next + 2;
    if (!TOKEN.test(name) || !PLAIN_VALUE.test(sent)) return undefined;
    const value = sent.trim();
    const lower = name.toLowerCase();
    if (headers[lower] !== undefined || rawHeaders.length >= 2 * LEAN_MAX_HEADERS) return undefined;
    switch (lower) {
      case 'content-length':
        if (!DIGITS.test(value)) return undefined;
        contentLength = Number(value);
        if (contentLength > LEAN_MAX_BODY_BYTES) return undefined;
        break;
      case 'connection': {
        const token = value.toLowerCase();
        if (token === 'close') close = true;
        else if (token !== 'keep-alive') return undefined;
        break;
      }
      case 'transfer-encoding':
      case 'expect':
      case 'upgrade':
        return undefined;
    }
    headers[lower] = value;
    rawHeaders.push(name, value);
  }
  // node:http answers 400 to an HTTP/1.1 request without Host (its requireHostHeader).
  if (headers.host === undefined) return undefined;
  return { url, route, headers, rawHeaders, contentLength, close };
}
