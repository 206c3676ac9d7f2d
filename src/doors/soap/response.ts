/** SOAP answers on /run: success envelopes, Fault envelopes and the one fault-status table. */
import { escapeXml } from '../../common/xml.js';
import { SOAP_NS, soapContentType, stripXmlDeclaration, type SoapVersion } from '../../common/soap-envelope.js';
import { XmlValue } from '../../common/xml-value.js';

/** Header the door adds when a non-XML output was wrapped as text. */
export const SOAP_WARNING_HEADER = 'X-Svc-Soap-Warning';
export const SOAP_WARNING_NON_XML = 'non-xml-output';
/** Namespace of the element that carries a non-XML output as text inside the Body. */
export const RAW_CONTENT_NS = 'urn:svc:soap:raw-content';

export interface SoapAnswer {
  readonly body: string;
  readonly contentType: string;
  /** Extra headers for the door to set (the non-XML warning). */
  readonly headers: Record<string, string>;
}

function envelope(version: SoapVersion, bodyContent: string): string {
  return (
    `<?xml version="1.0" encoding="utf-8"?>` +
    `<soap:Envelope xmlns:soap="${SOAP_NS[version]}"><soap:Body>${bodyContent}</soap:Body></soap:Envelope>`
  );
}

function rawContent(output: unknown): string {
  const text = typeof output === 'string' ? output : JSON.stringify(output);
  return `<RawContent xmlns="${RAW_CONTENT_NS}">${escapeXml(text)}</RawContent>`;
}

/**
 * Wraps a successful flow output. An XmlValue goes in verbatim (its declaration dropped); null
 * gives an empty Body; anything else (text, JSON) is escaped text inside `<RawContent>` and
 * flagged with `X-Svc-Soap-Warning: non-xml-output`.
 */
export function buildSoapAnswer(version: SoapVersion, output: unknown): SoapAnswer {
  const contentType = soapContentType(version);
  if (output instanceof XmlValue)
    return { body: envelope(version, stripXmlDeclaration(output.xml)), contentType, headers: {} };
  if (output === null || output === undefined) return { body: envelope(version, ''), contentType, headers: {} };
  return {
    body: envelope(version, rawContent(output)),
    contentType,
    headers: { [SOAP_WARNING_HEADER]: SOAP_WARNING_NON_XML },
  };
}

export interface SoapFaultInput {
  /** The HTTP status the error would have had on a plain /run (400, 422, 502, ...). */
  readonly errorStatus: number;
  /** Caller-facing error text; used when ctx.soap_fault_string is not set. */
  readonly message: string;
  /** `ctx.soap_fault_code`, when the flow set it. */
  readonly faultCode?: unknown;
  /** `ctx.soap_fault_string`, when the flow set it. */
  readonly faultString?: unknown;
  /** A `## Fault:` section's `response_status`; honoured on both versions. */
  readonly responseStatus?: number;
  /** True for an envelope that could not be read: 400 on both versions. */
  readonly malformedEnvelope?: boolean;
  /** Optional detail (a fault handler's output): XML verbatim, anything else as escaped text. */
  readonly detail?: unknown;
}

const V12_STATUSES: ReadonlySet<number> = new Set([400, 422, 502, 409, 503]);

/**
 * The fault-status table. Override first (a Fault section's response_status, both versions), then
 * a malformed envelope (400, both versions), then SOAP 1.1: 500 always; SOAP 1.2: 400 syntactic
 * rule, 422 semantic rule, 502 failed effect, 409 correlation conflict, 503 state unavailable,
 * 500 otherwise.
 */
export function soapFaultStatus(
  version: SoapVersion,
  input: Pick<SoapFaultInput, 'errorStatus' | 'responseStatus' | 'malformedEnvelope'>,
): number {
  if (input.responseStatus !== undefined) return input.responseStatus;
  if (input.malformedEnvelope === true) return 400;
  if (version === '1.1') return 500;
  return V12_STATUSES.has(input.errorStatus) ? input.errorStatus : 500;
}

const STANDARD_CODES: Readonly<Record<SoapVersion, ReadonlySet<string>>> = {
  '1.1': new Set(['VersionMismatch', 'MustUnderstand', 'Client', 'Server']),
  '1.2': new Set(['VersionMismatch', 'MustUnderstand', 'DataEncodingUnknown', 'Sender', 'Receiver']),
};

function present(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text === '' ? undefined : text;
}

/** A bare standard code gets the envelope prefix (`Client` -> `soap:Client`); others stay verbatim. */
/** The other version's name of a standard code: Server and Receiver, Client and Sender. */
const CROSS_VERSION: Readonly<Record<SoapVersion, Readonly<Record<string, string>>>> = {
  '1.1': { Receiver: 'Server', Sender: 'Client', DataEncodingUnknown: 'Client' },
  '1.2': { Server: 'Receiver', Client: 'Sender' },
};

/**
 * A standard code in this envelope's terms, whatever prefix it came with (a backend's Fault relayed
 * as ctx.soap_fault_code says `env:Receiver` or `SOAP-ENV:Server`, whose prefix our envelope does
 * not declare) and whichever version named it (a SOAP 1.2 backend's Receiver is a 1.1 client's
 * Server); undefined for a code of the application's own.
 */
function standardCode(version: SoapVersion, code: string): string | undefined {
  const local = code.slice(code.indexOf(':') + 1);
  if (STANDARD_CODES[version].has(local)) return local;
  return CROSS_VERSION[version][local];
}

function qualify(version: SoapVersion, code: string): string {
  const standard = standardCode(version, code);
  return standard !== undefined ? `soap:${standard}` : code;
}

function detailXml(detail: unknown): string {
  if (detail === undefined || detail === null) return '';
  if (detail instanceof XmlValue) return stripXmlDeclaration(detail.xml);
  return escapeXml(typeof detail === 'string' ? detail : JSON.stringify(detail));
}

/**
 * The Fault code when the flow set none: client-side (`soap:Client` on 1.1, `soap:Sender` on 1.2)
 * for a 4xx error or a malformed envelope, server-side (`soap:Server`, `soap:Receiver`) otherwise.
 */
export function defaultFaultCode(version: SoapVersion, errorStatus: number, malformedEnvelope = false): string {
  const clientSide = malformedEnvelope || (errorStatus >= 400 && errorStatus < 500);
  if (version === '1.1') return clientSide ? 'soap:Client' : 'soap:Server';
  return clientSide ? 'soap:Sender' : 'soap:Receiver';
}

export interface SoapFault extends SoapAnswer {
  readonly status: number;
}

/**
 * Builds a Fault envelope and its status. 1.1: faultcode/faultstring(/detail); 1.2:
 * Code/Value(/Subcode) + Reason/Text(/Detail). Default code: client-side for 4xx (soap:Client,
 * soap:Sender), server-side otherwise. A custom 1.2 code that is not a standard value goes in
 * Subcode/Value under the default Value, as SOAP 1.2 requires. No response_header_<name> ever
 * reaches a fault: the result carries no flow headers.
 */
export function buildSoapFault(version: SoapVersion, input: SoapFaultInput): SoapFault {
  const status = soapFaultStatus(version, input);
  const fallback = defaultFaultCode(version, input.errorStatus, input.malformedEnvelope === true);
  const reason = escapeXml(present(input.faultString) ?? input.message);
  const custom = present(input.faultCode);
  const detail = detailXml(input.detail);
  let fault: string;
  if (version === '1.1') {
    const code = escapeXml(custom !== undefined ? qualify(version, custom) : fallback);
    fault =
      `<soap:Fault><faultcode>${code}</faultcode><faultstring>${reason}</faultstring>` +
      (detail === '' ? '' : `<detail>${detail}</detail>`) +
      `</soap:Fault>`;
  } else {
    let code = `<soap:Value>${fallback}</soap:Value>`;
    const standard = custom === undefined ? undefined : standardCode(version, custom);
    if (custom !== undefined) {
      code =
        standard !== undefined
          ? `<soap:Value>soap:${standard}</soap:Value>`
          : `<soap:Value>${fallback}</soap:Value><soap:Subcode><soap:Value>${escapeXml(custom)}</soap:Value></soap:Subcode>`;
    }
    fault =
      `<soap:Fault><soap:Code>${code}</soap:Code><soap:Reason><soap:Text xml:lang="en">${reason}</soap:Text></soap:Reason>` +
      (detail === '' ? '' : `<soap:Detail>${detail}</soap:Detail>`) +
      `</soap:Fault>`;
  }
  return { status, body: envelope(version, fault), contentType: soapContentType(version), headers: {} };
}

/**
 * The door's one call for a failed SOAP /run: reads ctx.soap_fault_code / ctx.soap_fault_string
 * from the flow context (when the failure left one) and builds the Fault and its status.
 */
export function faultFromContext(
  version: SoapVersion,
  error: { readonly status: number; readonly message: string },
  ctx: Readonly<Record<string, unknown>> | undefined,
  extra: Pick<SoapFaultInput, 'responseStatus' | 'malformedEnvelope' | 'detail'> = {},
): SoapFault {
  return buildSoapFault(version, {
    errorStatus: error.status,
    message: error.message,
    faultCode: ctx?.soap_fault_code,
    faultString: ctx?.soap_fault_string,
    ...extra,
  });
}
