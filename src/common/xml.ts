/**
 * Safe XML for every door and the egress: no DOCTYPE/DTD (so no entity expansion and no external
 * entities), bounded size and depth, well-formedness checked, then either kept as an XmlValue or
 * flattened to JSON (for /enqueue).
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { XmlError } from './errors.js';
import { DEFAULT_XML_MAX_DEPTH, scanXml, XmlScanProblem, type XmlScan, type XmlScanOptions } from './xml-scan.js';
import { XmlValue } from './xml-value.js';

export { DOCTYPE_REFUSED, localName } from './xml-scan.js';
export { XmlError } from './errors.js';

export interface SafeXmlOptions {
  /** Largest document accepted, in UTF-8 bytes. Callers normally pass the resolved message ceiling. @default 1048576 */
  readonly maxBytes?: number;
  /** Deepest element nesting accepted. @default 64 */
  readonly maxDepth?: number;
}

export const DEFAULT_XML_MAX_BYTES = 1_048_576;

/**
 * Runs the safety pass and the well-formedness check; returns the scan (root and shallow spans).
 * Throws XmlError (400) naming the problem.
 */
export function checkXml(text: string, opts: SafeXmlOptions & Pick<XmlScanOptions, 'recordDepth'> = {}): XmlScan {
  const maxBytes = opts.maxBytes ?? DEFAULT_XML_MAX_BYTES;
  // length is a lower bound of the UTF-8 size; only count bytes when it could matter.
  if (text.length > maxBytes || (text.length * 3 > maxBytes && Buffer.byteLength(text) > maxBytes)) {
    throw new XmlError(`XML document is larger than ${maxBytes} bytes`);
  }
  let scan: XmlScan;
  try {
    scan = scanXml(text, { maxDepth: opts.maxDepth ?? DEFAULT_XML_MAX_DEPTH, recordDepth: opts.recordDepth ?? 2 });
  } catch (err) {
    if (err instanceof XmlScanProblem) throw new XmlError(err.message);
    throw err;
  }
  const verdict = XMLValidator.validate(text);
  if (verdict !== true) {
    throw new XmlError(`malformed XML at line ${verdict.err.line}, column ${verdict.err.col}: ${verdict.err.msg}`);
  }
  return scan;
}

/** Parses a document into an XmlValue kept verbatim; `root` is the root's local name (prefix dropped). */
export function parseXmlValue(text: string, opts: SafeXmlOptions = {}): XmlValue {
  const scan = checkXml(text, { ...opts, recordDepth: 0 });
  return new XmlValue(text, scan.root.local);
}

const REFERENCE = /&(lt|gt|amp|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);/g;
const NAMED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** Decodes the five predefined entities and character references in one pass. */
export function decodeXmlText(text: string): string {
  if (text.indexOf('&') < 0) return text;
  return text.replace(REFERENCE, (_m, ref: string) => {
    const named = NAMED[ref];
    if (named !== undefined) return named;
    const code = ref[1] === 'x' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : '\ufffd';
  });
}

/** Escapes text for element content or a double-quoted attribute value. */
export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) =>
    c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '&' ? '&amp;' : c === '"' ? '&quot;' : '&apos;',
  );
}

/** Attribute keys in flattened JSON carry this prefix (`<a id="1">` -> `{"@id": "1"}`). */
export const JSON_ATTRIBUTE_PREFIX = '@';
/** Text of an element that also has attributes or child elements goes under this key. */
export const JSON_TEXT_KEY = '#text';

/** How both parsers read a document: attributes as `@name`, text kept as text, entities decoded by us (no DTD ever reaches here). */
const PARSER_OPTIONS = {
  ignoreAttributes: false,
  attributeNamePrefix: JSON_ATTRIBUTE_PREFIX,
  textNodeName: JSON_TEXT_KEY,
  parseTagValue: false, // text stays text: "007" must not become 7
  parseAttributeValue: false,
  trimValues: true,
  processEntities: false, // we decode the predefined entities ourselves; no DTD ever reaches here
  ignoreDeclaration: true,
  ignorePiTags: true,
  maxNestedTags: DEFAULT_XML_MAX_DEPTH + 1,
  tagValueProcessor: (_name: string, value: string) => decodeXmlText(value),
  attributeValueProcessor: (_name: string, value: string) => decodeXmlText(value),
};

// One parser, reused: it holds no per-document state between parse() calls.
const flattener = new XMLParser({ ...PARSER_OPTIONS, removeNSPrefix: true }); // prefix-agnostic keys; xmlns declarations are dropped

// The same rules, but every name as written (prefix included) and namespace declarations kept.
const exact = new XMLParser({ ...PARSER_OPTIONS, removeNSPrefix: false });

/**
 * A document as a JSON tree that keeps everything but layout: the root element, names with their
 * prefixes, attributes with namespace declarations, text (whitespace between elements, comments,
 * the declaration and the quoting of attributes do not count). Two documents that mean the same
 * markup give equal trees (`svc test` compares XML answers so).
 */
export function xmlToExactJson(text: string, opts: SafeXmlOptions = {}): unknown {
  checkXml(text, { ...opts, recordDepth: 0 });
  try {
    return exact.parse(text) as unknown;
  } catch (err) {
    throw new XmlError(`XML cannot be converted to JSON: ${(err as Error).message}`, err);
  }
}

/**
 * Flattens XML to JSON for /enqueue. Rules: the root tag is dropped (its content is the result);
 * child elements become object keys by local name; a repeated child becomes an array in document
 * order; text is a string (never a number); attributes become `@name` keys and, on an element that
 * has them, text goes under `#text`; an empty element is `""`; an empty root gives `{}`; comments,
 * processing instructions and namespace declarations are dropped.
 */
export function xmlToJson(text: string, opts: SafeXmlOptions = {}): unknown {
  const scan = checkXml(text, { ...opts, recordDepth: 0 });
  let parsed: Record<string, unknown>;
  try {
    parsed = flattener.parse(text) as Record<string, unknown>;
  } catch (err) {
    // e.g. an element named __proto__ (refused by the parser to prevent prototype pollution)
    throw new XmlError(`XML cannot be converted to JSON: ${(err as Error).message}`, err);
  }
  const content = parsed[scan.root.local];
  return content === '' || content === undefined ? {} : content;
}
