/** Turns a flow's output into a response body and content type, shared by every door. */
import { isXmlValue } from '../common/xml-value.js';

export interface EncodedOutput {
  /** Absent for an empty answer (output null or undefined). */
  body: string | Buffer | undefined;
  /** Absent when there is no body. */
  contentType: string | undefined;
}

const EMPTY: EncodedOutput = Object.freeze({ body: undefined, contentType: undefined }) as EncodedOutput;

/**
 * JSON value -> JSON text (`application/json`); string -> verbatim (`text/plain; charset=utf-8`);
 * null/undefined -> no body and no content type; XmlValue -> its XML (`application/xml; charset=utf-8`);
 * Buffer -> verbatim (`application/octet-stream`).
 */
export function encodeOutput(output: unknown): EncodedOutput {
  if (output === null || output === undefined) return EMPTY;
  if (typeof output === 'string') return { body: output, contentType: 'text/plain; charset=utf-8' };
  if (isXmlValue(output)) return { body: output.xml, contentType: 'application/xml; charset=utf-8' };
  if (Buffer.isBuffer(output)) return { body: output, contentType: 'application/octet-stream' };
  return { body: toJsonText(output), contentType: 'application/json' };
}

/** Plain JSON.stringify (XmlValue has toJSON); a bigint, which it refuses, takes the slower replacer path. */
function toJsonText(output: unknown): string {
  try {
    return JSON.stringify(output);
  } catch (err) {
    if (err instanceof TypeError) return JSON.stringify(output, jsonReplacer);
    throw err;
  }
}

/** XmlValue nested inside JSON is written as its XML text; bigint as a number. */
function jsonReplacer(_key: string, value: unknown): unknown {
  if (isXmlValue(value)) return value.xml;
  if (typeof value === 'bigint') return Number(value);
  return value;
}
