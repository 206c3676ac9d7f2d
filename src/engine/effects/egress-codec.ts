/** Encoding of outbound messages and decoding of backend responses for http_egress. */
import type { Dispatcher } from 'undici';
import { JSON_MAX_DEPTH, jsonNestsDeeperThan } from '../../common/json-depth.js';
import { parseXmlValue } from '../../common/xml.js';
import { XmlValue } from '../../common/xml-value.js';

export interface EncodedBody {
  readonly body: string | undefined;
  /** undefined: send no Content-Type. */
  readonly contentType: string | undefined;
}

/**
 * A message is sent by its type: XmlValue as XML, a string as text, null/undefined as no body,
 * anything else as JSON. `override` (the step's content_type) replaces the media type only.
 */
export function encodeMessage(message: unknown, override?: string): EncodedBody {
  let body: string | undefined;
  let contentType: string | undefined;
  if (message instanceof XmlValue) {
    body = message.xml;
    contentType = 'application/xml; charset=utf-8';
  } else if (typeof message === 'string') {
    body = message;
    contentType = 'text/plain; charset=utf-8';
  } else if (message === null || message === undefined) {
    body = undefined;
    contentType = undefined;
  } else {
    body = JSON.stringify(message);
    contentType = 'application/json';
  }
  return { body, contentType: override ?? contentType };
}

/** Thrown by readLimited when the response passes the ceiling; the socket has been dropped. */
export class ResponseTooLarge extends Error {
  override readonly name = 'ResponseTooLarge';
}

/**
 * Reads a response body chunk by chunk and abandons it (destroying the connection) as soon as it
 * passes `limitBytes`; a declared Content-Length over the limit is abandoned without reading.
 */
export async function readLimited(res: Dispatcher.ResponseData, limitBytes: number): Promise<Buffer> {
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) {
    res.body.destroy();
    throw new ResponseTooLarge(`declared ${declared} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limitBytes) {
      res.body.destroy();
      throw new ResponseTooLarge(`passed ${limitBytes} bytes`);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks, size);
}

/** Response headers as lowercase name -> one string (repeated values joined with `, `). */
export function flattenHeaders(headers: Dispatcher.ResponseData['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return out;
}

export type ResponseKind = 'json' | 'xml' | 'text';

export function kindOf(contentType: string | undefined): ResponseKind {
  const ct = (contentType ?? '').toLowerCase().split(';')[0]!.trim();
  if (ct === 'application/json' || ct.endsWith('+json')) return 'json';
  if (ct === 'application/xml' || ct === 'text/xml' || ct.endsWith('+xml')) return 'xml';
  return 'text';
}

/** Problem decoding a body that claimed a type; the caller turns it into a step failure. */
export class DecodeProblem extends Error {
  override readonly name = 'DecodeProblem';
}

/**
 * Decodes a non-SOAP response by its content type: JSON (nesting at most JSON_MAX_DEPTH levels), XML
 * (XmlValue), else text; empty is null.
 */
export function decodeResponse(bytes: Buffer, contentType: string | undefined, maxBytes: number): unknown {
  if (bytes.length === 0) return null;
  const text = bytes.toString('utf8');
  switch (kindOf(contentType)) {
    case 'json':
      // The same limit as a request body: the flow could not answer, log or queue a deeper value.
      if (jsonNestsDeeperThan(bytes))
        throw new DecodeProblem(`backend declared JSON but the body nests deeper than ${JSON_MAX_DEPTH} levels`);
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new DecodeProblem('backend declared JSON but the body does not parse as JSON');
      }
    case 'xml':
      try {
        return parseXmlValue(text, { maxBytes });
      } catch (err) {
        throw new DecodeProblem(`backend declared XML but the body was refused: ${(err as Error).message}`);
      }
    default:
      return text;
  }
}
