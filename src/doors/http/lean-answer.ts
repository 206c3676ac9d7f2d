/**
 * An HttpAnswer as the bytes of an HTTP/1.1 response, for the lean front (lean-front.ts): the
 * status line, the answer's headers checked as node:http checks them, `Content-Length`, `Date`
 * and the keep-alive headers node:http adds, then the body, in one string or buffer (one socket
 * write). No I/O.
 */
import { STATUS_CODES } from 'node:http';
import type { HttpAnswer } from './answer.js';
import { TOKEN } from './lean-head.js';

/** A header value of plain ASCII: written as it is, in one string with the body. */
const ASCII_VALUE = /^[\t\x20-\x7e]*$/;
/** A header value node:http accepts (its checkInvalidHeaderChar): also bytes 0x80-0xff, written as latin1. */
const NODE_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** node:http's test for a `Connection` value that ends the connection. */
const CONNECTION_CLOSE = /(?:^|\W)close(?:$|\W)/i;

export interface LeanWire {
  /** One write: a string is written as UTF-8 (its head is ASCII), a buffer as it is. */
  readonly bytes: string | Buffer;
  /** The connection ends once these bytes are written. */
  readonly close: boolean;
}

let dateSecond = -1;
let dateText = '';

/** The `Date` header's value, made once a second (node:http caches it likewise). */
function httpDate(): string {
  const second = Math.floor(Date.now() / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(second * 1000).toUTCString();
  }
  return dateText;
}

/** The error node:http's writeHead throws for the same header, so an answer it refuses is refused alike. */
function invalidHeader(code: 'ERR_INVALID_HTTP_TOKEN' | 'ERR_INVALID_CHAR', name: string): TypeError {
  const what =
    code === 'ERR_INVALID_CHAR'
      ? `Invalid character in header content ["${name}"]`
      : `Header name must be a valid HTTP token ["${name}"]`;
  return Object.assign(new TypeError(what), { code });
}

/**
 * The response's bytes. `close`: the connection ends after it (the request asked, the server is
 * closing, or its body was given up). Throws, having made nothing, for a status or header
 * node:http's writeHead would refuse. The body is framed by `Content-Length` alone: a
 * `Content-Length` or `Transfer-Encoding` among the answer's headers is left out.
 */
export function leanAnswerBytes(answer: HttpAnswer, close: boolean, keepAliveSecs: number): LeanWire {
  const status = answer.status;
  if (!Number.isInteger(status) || status < 100 || status > 999)
    throw Object.assign(new RangeError(`Invalid status code: ${status}`), { code: 'ERR_HTTP_INVALID_STATUS_CODE' });
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\n`;
  let latin1 = false;
  let ownConnection = false;
  let ownDate = false;
  let ownKeepAlive = false;
  const headers = answer.headers;
  for (const name in headers) {
    if (name === 'content-length' || name === 'transfer-encoding') continue;
    const value = headers[name]!;
    if (!TOKEN.test(name)) throw invalidHeader('ERR_INVALID_HTTP_TOKEN', name);
    if (!ASCII_VALUE.test(value)) {
      if (!NODE_VALUE.test(value)) throw invalidHeader('ERR_INVALID_CHAR', name);
      latin1 = true;
    }
    if (name === 'connection') {
      ownConnection = true;
      if (CONNECTION_CLOSE.test(value)) close = true;
    } else if (name === 'date') ownDate = true;
    else if (name === 'keep-alive') ownKeepAlive = true;
    head += `${name}: ${value}\r\n`;
  }
  // node:http sends no body with a 204 or a 304, whatever it is given.
  const body = status === 204 || status === 304 ? undefined : answer.body;
  if (body !== undefined)
    head += `content-length: ${typeof body === 'string' ? Buffer.byteLength(body) : body.length}\r\n`;
  else if (status !== 204 && status !== 304) head += 'content-length: 0\r\n';
  if (!ownDate) head += `Date: ${httpDate()}\r\n`;
  if (!ownConnection) head += close ? 'Connection: close\r\n' : 'Connection: keep-alive\r\n';
  if (!close && !ownKeepAlive && keepAliveSecs > 0) head += `Keep-Alive: timeout=${keepAliveSecs}\r\n`;
  head += '\r\n';
  if (body === undefined || body.length === 0) return { bytes: latin1 ? Buffer.from(head, 'latin1') : head, close };
  if (!latin1 && typeof body === 'string') return { bytes: head + body, close };
  const bodyBytes = typeof body === 'string' ? Buffer.from(body) : body;
  return { bytes: Buffer.concat([Buffer.from(head, 'latin1'), bodyBytes]), close };
}
