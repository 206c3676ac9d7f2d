/** Inbound SOAP on /run: detection (content type + SOAPAction or an early Envelope) and unwrapping. */
import { SoapEnvelopeError, XmlError } from '../../common/errors.js';
import { readEnvelope, type SoapVersion } from '../../common/soap-envelope.js';
import type { SafeXmlOptions } from '../../common/xml.js';
import type { XmlValue } from '../../common/xml-value.js';

/** Bytes of the body searched for an `Envelope` element when no SOAPAction header is present. */
export const SOAP_SNIFF_BYTES = 512;

const ENVELOPE_TAG = /<(?:[A-Za-z_][\w.-]*:)?Envelope[\s/>]/;

export interface SoapDetection {
  /** From the content type (application/soap+xml) or the 1.2 namespace; refined after parsing. */
  readonly version: SoapVersion;
  /** SOAPAction header (surrounding quotes removed), else the 1.2 `action` content-type parameter. */
  readonly action: string | undefined;
}

/** The media-type parameter `name` of a Content-Type value, unquoted. */
export function contentTypeParam(contentType: string, name: string): string | undefined {
  const re = new RegExp(`;\\s*${name}\\s*=\\s*("((?:[^"\\\\]|\\\\.)*)"|[^;\\s]*)`, 'i');
  const m = re.exec(contentType);
  if (m === null) return undefined;
  return m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[1];
}

function unquote(value: string): string {
  const v = value.trim();
  return v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v;
}

/**
 * Decides whether a /run request is SOAP. `soapAction` is the raw `SOAPAction` header (undefined
 * when absent; duplicates joined). Returns undefined for a non-SOAP request: the door then parses a
 * `text/xml` body as a plain XML value.
 */
export function detectSoap(
  contentType: string | undefined,
  soapAction: string | undefined,
  body: Buffer | string,
): SoapDetection | undefined {
  if (contentType === undefined) return undefined;
  const ct = contentType.toLowerCase();
  const soap12Type = ct.includes('application/soap+xml');
  if (!soap12Type && !ct.includes('text/xml')) return undefined;
  const head =
    typeof body === 'string' ? body.slice(0, SOAP_SNIFF_BYTES) : body.subarray(0, SOAP_SNIFF_BYTES).toString('utf8');
  if (soapAction === undefined && !ENVELOPE_TAG.test(head)) return undefined;
  const version: SoapVersion = soap12Type || head.includes('http://www.w3.org/2003/05/soap-envelope') ? '1.2' : '1.1';
  const action =
    soapAction !== undefined ? unquote(soapAction) : soap12Type ? contentTypeParam(contentType, 'action') : undefined;
  return { version, action };
}

export interface SoapRequest {
  readonly version: SoapVersion;
  /** `ctx.soap_action`; undefined when the request named none. */
  readonly action: string | undefined;
  /** The Body's content as an XML value (`ctx.input`); null for an empty Body. */
  readonly body: XmlValue | null;
}

/**
 * Unwraps a detected SOAP request. A body that is not a usable envelope throws SoapEnvelopeError
 * (400 with a SOAP Fault of the detected version).
 */
export function parseSoapRequest(
  detection: SoapDetection,
  body: Buffer | string,
  opts: SafeXmlOptions = {},
): SoapRequest {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  try {
    const env = readEnvelope(text, opts);
    // Either signal selects 1.2 (spec: application/soap+xml or the 1.2 namespace); otherwise 1.1.
    const version: SoapVersion = detection.version === '1.2' || env.version === '1.2' ? '1.2' : '1.1';
    return { version, action: detection.action, body: env.body };
  } catch (err) {
    if (err instanceof XmlError)
      throw new SoapEnvelopeError(`malformed SOAP envelope: ${err.message}`, detection.version, err);
    throw err;
  }
}

/**
 * Detection and unwrapping in one call for the /run door: undefined when the request is not SOAP
 * (parse it by its content type), else the unwrapped request; throws SoapEnvelopeError (400 + Fault).
 */
export function readSoapRequest(
  contentType: string | undefined,
  soapAction: string | undefined,
  body: Buffer | string,
  opts: SafeXmlOptions = {},
): SoapRequest | undefined {
  const detection = detectSoap(contentType, soapAction, body);
  return detection === undefined ? undefined : parseSoapRequest(detection, body, opts);
}
