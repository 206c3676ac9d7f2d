/**
 * One fuzzed HTTP request as plain data (what fast-check generates, shrinks and prints), and its
 * bytes on the wire. Credentials are symbolic (`{main}`), so a printed case means the same thing
 * against the next server, whose keys are new.
 */
import { sign } from '../helpers/raw-http.js';

/** The keys the fuzz target creates (fuzz-target.ts), by the role each plays. */
export const KEY_NAMES = ['main', 'narrow', 'throttled', 'foreign', 'revoked', 'gone'] as const;
export type KeyName = (typeof KEY_NAMES)[number];

/** How the request's body is framed; the last three leave the server something odd to deal with. */
export type Framing =
  /** Content-Length equal to the body. */
  | 'length'
  /** Transfer-Encoding: chunked, body cut into chunks, terminated. */
  | 'chunked'
  /** No length at all: to the server the body bytes are the start of a next request. */
  | 'none'
  /** Content-Length shorter than the body: the rest looks like a pipelined request. */
  | 'length-short'
  /** Content-Length longer than the body: the server waits for bytes that never come. */
  | 'length-long'
  /** Chunks with no terminating chunk: the server waits as well. */
  | 'chunked-open';

export interface HttpCase {
  /** Which route template the generator aimed at (for the summary; the server decides from the bytes). */
  readonly route: string;
  readonly method: string;
  /** The request-target as a byte string (each char one byte: UTF-8 is pre-encoded, so invalid UTF-8 can be sent). */
  readonly target: string;
  readonly version: string;
  /** The Host header's value; null: no Host header. */
  readonly host: string | null;
  /** Authorization header values in order (two or more: duplicates); `{main}` and the like stand for the keys. */
  readonly authorization: readonly string[];
  /** The Content-Type header's value; null: none. */
  readonly contentType: string | null;
  /** X-Svc-Signature: the right HMAC of the body, a wrong one, or none. */
  readonly signature: 'right' | 'wrong' | 'none';
  /** Other header lines, byte strings, in order. `{session}` stands for a logged-in UI session. */
  readonly headers: readonly (readonly [string, string])[];
  /** The body as a byte string. */
  readonly body: string;
  readonly framing: Framing;
  /** True: the client half-closes after writing (it goes away before the answer). */
  readonly halfClose: boolean;
  /** For the known cases only: the statuses the spec allows for this exact request. */
  readonly expect?: readonly number[];
}

/** What the bytes of a case are made from at send time. */
export interface WireContext {
  readonly keys: Readonly<Record<KeyName, string>>;
  readonly secret: string;
  /** The svc_ui cookie value of a logged-in session, or '' when none. */
  readonly session: string;
}

/** True when the request as sent is incomplete and the server may rightly wait for more (or for Node's own timeout). */
export function leavesServerWaiting(c: HttpCase): boolean {
  return c.framing === 'length-long' || c.framing === 'chunked-open';
}

function substitute(text: string, ctx: WireContext): string {
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => {
    if (name === 'session') return ctx.session;
    return (ctx.keys as Record<string, string>)[name] ?? whole;
  });
}

function chunked(body: Buffer, terminated: boolean): Buffer {
  const parts: Buffer[] = [];
  // Uneven chunk sizes, fixed by the body's length so a case always gives the same bytes.
  let size = 1;
  for (let at = 0; at < body.length; at += size, size = size * 3 + 1) {
    const piece = body.subarray(at, at + size);
    parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`, 'latin1'), piece, Buffer.from('\r\n', 'latin1'));
  }
  if (terminated) parts.push(Buffer.from('0\r\n\r\n', 'latin1'));
  return Buffer.concat(parts);
}

/** The request's bytes. */
export function toWire(c: HttpCase, ctx: WireContext): Buffer {
  const body = Buffer.from(c.body, 'latin1');
  const lines = [`${c.method} ${c.target} ${c.version}`];
  if (c.host !== null) lines.push(`Host: ${c.host}`);
  for (const value of c.authorization) lines.push(`Authorization: ${substitute(value, ctx)}`);
  if (c.contentType !== null) lines.push(`Content-Type: ${c.contentType}`);
  if (c.signature === 'right') lines.push(`X-Svc-Signature: ${sign(ctx.secret, body)}`);
  else if (c.signature === 'wrong') lines.push(`X-Svc-Signature: ${sign(`${ctx.secret}-not`, body)}`);
  for (const [name, value] of c.headers) lines.push(`${name}: ${substitute(value, ctx)}`);
  let payload: Buffer = body;
  switch (c.framing) {
    case 'length':
      lines.push(`Content-Length: ${body.length}`);
      break;
    case 'length-short':
      lines.push(`Content-Length: ${Math.max(0, body.length - 1 - (body.length >> 2))}`);
      break;
    case 'length-long':
      lines.push(`Content-Length: ${body.length + 7}`);
      break;
    case 'chunked':
    case 'chunked-open':
      lines.push('Transfer-Encoding: chunked');
      payload = chunked(body, c.framing === 'chunked');
      break;
    case 'none':
      break;
  }
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload]);
}

/** A case for a report: long strings cut, so a 200 KB body does not bury the finding. */
export function describeCase(c: HttpCase, maxString = 300): string {
  return JSON.stringify(
    c,
    (_key, value: unknown) =>
      typeof value === 'string' && value.length > maxString
        ? `${value.slice(0, maxString)}... (${value.length} bytes in all)`
        : value,
    2,
  );
}
