/**
 * SOAP 1.1 / 1.2 envelopes shared by the SOAP door (inbound) and the http_egress effect (outbound):
 * namespaces, content types, wrapping a body, and reading an envelope's Body (prefix-agnostic)
 * with any Fault it holds.
 */
import { checkXml, escapeXml, xmlToJson, XmlError, type SafeXmlOptions } from './xml.js';
import { namespaceDeclarations, type XmlElementSpan } from './xml-scan.js';
import { XmlValue } from './xml-value.js';

export type SoapVersion = '1.1' | '1.2';

export const SOAP_NS: Readonly<Record<SoapVersion, string>> = Object.freeze({
  '1.1': 'http://schemas.xmlsoap.org/soap/envelope/',
  '1.2': 'http://www.w3.org/2003/05/soap-envelope',
});

/** Media type of an envelope; SOAP 1.2 carries the action as a content-type parameter. */
export function soapContentType(version: SoapVersion, action?: string): string {
  if (version === '1.1') return 'text/xml; charset=utf-8';
  const param = action === undefined || action === '' ? '' : `; action="${action.replace(/["\\]/g, '\\$&')}"`;
  return `application/soap+xml; charset=utf-8${param}`;
}

const XML_DECLARATION = /^\uFEFF?\s*<\?xml[^>]*\?>\s*/;

/** Drops a leading `<?xml ...?>` declaration so a document can be nested in an envelope. */
export function stripXmlDeclaration(xml: string): string {
  return xml.replace(XML_DECLARATION, '');
}

/** Wraps already-serialised body content (trusted XML) in an envelope of `version`. */
export function wrapEnvelope(version: SoapVersion, bodyContent: string): string {
  return (
    `<?xml version="1.0" encoding="utf-8"?>` +
    `<soap:Envelope xmlns:soap="${SOAP_NS[version]}"><soap:Body>${bodyContent}</soap:Body></soap:Envelope>`
  );
}

/** Wraps a flow message: an XmlValue goes in as XML, anything else as escaped text. */
export function wrapMessage(version: SoapVersion, message: unknown): string {
  if (message instanceof XmlValue) return wrapEnvelope(version, stripXmlDeclaration(message.xml));
  if (message === null || message === undefined) return wrapEnvelope(version, '');
  const text = typeof message === 'string' ? message : JSON.stringify(message);
  return wrapEnvelope(version, escapeXml(text));
}

export interface SoapFaultInfo {
  readonly code: string;
  readonly string: string;
}

export interface ReadEnvelope {
  /** From the Envelope namespace; undefined for an unknown namespace. */
  readonly version: SoapVersion | undefined;
  /** The Body's element content with in-scope namespace declarations copied onto it; null when empty. */
  readonly body: XmlValue | null;
  /** Set when the Body holds a Fault. */
  readonly fault?: SoapFaultInfo;
}

function declare(child: string, childSpan: XmlElementSpan, scope: Map<string, string>): string {
  const own = namespaceDeclarations(childSpan.attrs);
  let extra = '';
  for (const [prefix, uri] of scope) {
    if (own.has(prefix)) continue;
    // Copy only what the fragment can use: the default namespace, or a prefix it mentions.
    if (prefix !== '' && !child.includes(`${prefix}:`)) continue;
    extra += prefix === '' ? ` xmlns="${escapeXml(uri)}"` : ` xmlns:${prefix}="${escapeXml(uri)}"`;
  }
  if (extra === '') return child;
  const at = 1 + childSpan.name.length;
  return child.slice(0, at) + extra + child.slice(at);
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if (typeof v['#text'] === 'string') return v['#text'];
    if (Array.isArray(value)) return textOf(value[0]);
  }
  return '';
}

function readFault(xml: string): SoapFaultInfo {
  const f = xmlToJson(xml) as Record<string, unknown>;
  if (typeof f !== 'object' || f === null) return { code: '', string: '' };
  if ('faultcode' in f || 'faultstring' in f) return { code: textOf(f.faultcode), string: textOf(f.faultstring) };
  const code = (f.Code ?? {}) as Record<string, unknown>;
  const reason = (f.Reason ?? {}) as Record<string, unknown>;
  const sub = (code.Subcode ?? {}) as Record<string, unknown>;
  const subValue = textOf(sub.Value);
  return { code: subValue !== '' ? subValue : textOf(code.Value), string: textOf(reason.Text) };
}

/**
 * Reads an envelope: the root must be `Envelope` with a `Body` child (any prefix). Throws XmlError
 * naming the problem (unsafe or malformed XML, no Envelope, no Body, text in the Body).
 */
export function readEnvelope(text: string, opts: SafeXmlOptions = {}): ReadEnvelope {
  const scan = checkXml(text, { ...opts, recordDepth: 2 });
  const env = scan.root;
  if (env.local !== 'Envelope') throw new XmlError(`SOAP envelope expected, found root element <${env.name}>`);
  const envNs = namespaceDeclarations(env.attrs);
  const prefix = env.name.includes(':') ? env.name.slice(0, env.name.indexOf(':')) : '';
  const nsUri = envNs.get(prefix);
  const version: SoapVersion | undefined =
    nsUri === SOAP_NS['1.2'] ? '1.2' : nsUri === SOAP_NS['1.1'] ? '1.1' : undefined;
  const body = scan.elements.find((e) => e.depth === 1 && e.local === 'Body');
  if (body === undefined) throw new XmlError('SOAP envelope has no Body element');
  const children = scan.elements.filter((e) => e.depth === 2 && e.start >= body.openEnd && e.end <= body.closeStart);
  const scope = new Map(envNs);
  for (const [p, uri] of namespaceDeclarations(body.attrs)) scope.set(p, uri);
  if (children.length === 0) {
    const inner = text.slice(body.openEnd, body.closeStart).replace(/<!--[\s\S]*?-->/g, '');
    if (inner.trim() !== '') throw new XmlError('SOAP Body holds text; it must hold elements');
    return { version, body: null };
  }
  const xml = children.map((c) => declare(text.slice(c.start, c.end), c, scope)).join('');
  const first = children[0]!;
  const value = new XmlValue(xml, first.local);
  if (first.local === 'Fault') return { version, body: value, fault: readFault(xml) };
  return { version, body: value };
}
