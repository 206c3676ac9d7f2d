/**
 * A linear, allocation-light XML tag scanner: the safety pass run before any parser sees a document.
 * It refuses DOCTYPE and other markup declarations (so no entity can ever be defined, expanded or
 * fetched), characters XML does not allow (written literally or as references), bounds nesting
 * depth, checks tag balance, a single root and entity references, and records the source spans of
 * the shallow elements so SOAP can cut the Body out verbatim.
 */

/** Why a document was refused; `message` is the caller-facing sentence. */
export class XmlScanProblem extends Error {
  override readonly name = 'XmlScanProblem';
}

/** Source span of one element (offsets into the scanned text, UTF-16 code units). */
export interface XmlElementSpan {
  /** Qualified name as written, e.g. `soap:Envelope`. */
  readonly name: string;
  /** Local name (prefix dropped). */
  readonly local: string;
  /** 0 for the root element. */
  readonly depth: number;
  /** Offset of `<`. */
  readonly start: number;
  /** Offset just past the start tag's `>`. */
  readonly openEnd: number;
  /** Offset of the end tag's `<` (equals `openEnd` for `<x/>`). */
  closeStart: number;
  /** Offset just past the element's last `>`. */
  end: number;
  /** The start tag's attribute text (everything between the name and `>` or `/>`). */
  readonly attrs: string;
}

export interface XmlScanOptions {
  /** Deepest element nesting accepted (root is depth 1 here). @default 64 */
  readonly maxDepth?: number;
  /** Spans are recorded for elements at depth <= this (root = 0). @default 2 */
  readonly recordDepth?: number;
}

export interface XmlScan {
  readonly root: XmlElementSpan;
  /** Recorded elements in document order. */
  readonly elements: readonly XmlElementSpan[];
}

export const DEFAULT_XML_MAX_DEPTH = 64;
export const DOCTYPE_REFUSED = 'XML DOCTYPE declarations are not accepted (no DTDs, no entity definitions)';

const NAME = /^[A-Za-z_:][\w.:-]*/;
// Without a DTD only the five predefined entities and character references exist.
const BAD_REFERENCE = /&(?!(?:lt|gt|amp|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)/;

export function localName(qname: string): string {
  const colon = qname.indexOf(':');
  return colon < 0 ? qname : qname.slice(colon + 1);
}

const CHAR_REFERENCE = /&#(?:([0-9]+)|x([0-9a-fA-F]+));/g;

/**
 * XML 1.0's Char production: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].
 * A character reference to anything else (NUL, a surrogate, past U+10FFFF) is not well-formed.
 */
function isXmlChar(code: number): boolean {
  return (
    code === 0x9 ||
    code === 0xa ||
    code === 0xd ||
    (code >= 0x20 && code <= 0xd7ff) ||
    (code >= 0xe000 && code <= 0xfffd) ||
    (code >= 0x10000 && code <= 0x10ffff)
  );
}

/**
 * A character outside the Char production, written literally. With the `u` flag a surrogate pair is
 * one code point (allowed) and a lone surrogate matches. BOM (U+FEFF) is an allowed character.
 */
const FORBIDDEN_CHAR = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/**
 * Refuses a literal character XML forbids anywhere in the document (text, attributes, names,
 * comments, CDATA, processing instructions): the parsers behind this scan would otherwise carry a
 * NUL or U+FFFE into a flow, an answer or a log. One pass over the whole text, before anything else.
 */
function checkChars(text: string): void {
  const m = FORBIDDEN_CHAR.exec(text);
  if (m === null) return;
  const code = m[0].codePointAt(0)!;
  const hex = code.toString(16).toUpperCase().padStart(4, '0');
  throw new XmlScanProblem(`XML holds the character U+${hex} at offset ${m.index}, which XML does not allow`);
}

function checkText(text: string, where: string): void {
  if (text.indexOf('&') < 0) return;
  if (BAD_REFERENCE.test(text)) {
    throw new XmlScanProblem(`XML ${where} holds an undefined entity reference or a bare "&" (write &amp;)`);
  }
  for (const m of text.matchAll(CHAR_REFERENCE)) {
    const digits = (m[1] ?? m[2]!).replace(/^0+(?=.)/, '');
    // Measured before parsing, so a huge number cannot lose precision and pass.
    const code = digits.length > 8 ? Number.POSITIVE_INFINITY : Number.parseInt(digits, m[1] !== undefined ? 10 : 16);
    if (!isXmlChar(code))
      throw new XmlScanProblem(
        `XML ${where} holds the character reference ${m[0]}, which names a character XML does not allow`,
      );
  }
}

/** Scans `text`; throws XmlScanProblem naming the first problem found. */
export function scanXml(text: string, opts: XmlScanOptions = {}): XmlScan {
  const maxDepth = opts.maxDepth ?? DEFAULT_XML_MAX_DEPTH;
  const recordDepth = opts.recordDepth ?? 2;
  checkChars(text);
  const stack: { name: string; span?: XmlElementSpan }[] = [];
  const elements: XmlElementSpan[] = [];
  let root: XmlElementSpan | undefined;
  let rootClosed = false;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const n = text.length;

  const until = (from: number, token: string, what: string): number => {
    const at = text.indexOf(token, from);
    if (at < 0) throw new XmlScanProblem(`XML ${what} is not terminated`);
    return at + token.length;
  };

  while (i < n) {
    const lt = text.indexOf('<', i);
    const chunk = text.slice(i, lt < 0 ? n : lt);
    if (chunk.length > 0) {
      if (stack.length === 0) {
        if (chunk.trim().length > 0) throw new XmlScanProblem('XML has text outside the root element');
      } else checkText(chunk, 'text');
    }
    if (lt < 0) break;
    const next = text.charCodeAt(lt + 1);
    if (next === 0x3f /* ? */) {
      i = until(lt + 2, '?>', 'processing instruction');
      continue;
    }
    if (next === 0x21 /* ! */) {
      if (text.startsWith('<!--', lt)) {
        i = until(lt + 4, '-->', 'comment');
        continue;
      }
      if (text.startsWith('<![CDATA[', lt)) {
        if (stack.length === 0) throw new XmlScanProblem('XML has a CDATA section outside the root element');
        i = until(lt + 9, ']]>', 'CDATA section');
        continue;
      }
      if (text.slice(lt + 2, lt + 9).toUpperCase() === 'DOCTYPE') throw new XmlScanProblem(DOCTYPE_REFUSED);
      throw new XmlScanProblem('XML markup declarations (<!ENTITY, <!ELEMENT, ...) are not accepted');
    }
    if (next === 0x2f /* / */) {
      const close = text.indexOf('>', lt);
      if (close < 0) throw new XmlScanProblem('XML end tag is not terminated');
      const name = text.slice(lt + 2, close).trim();
      const open = stack.pop();
      if (open === undefined) throw new XmlScanProblem(`XML end tag </${name}> has no start tag`);
      if (open.name !== name) throw new XmlScanProblem(`XML end tag </${name}> does not match <${open.name}>`);
      if (open.span !== undefined) {
        open.span.closeStart = lt;
        open.span.end = close + 1;
      }
      if (stack.length === 0) rootClosed = true;
      i = close + 1;
      continue;
    }
    // A start tag: name, then attributes up to an unquoted `>`.
    const m = NAME.exec(text.slice(lt + 1, lt + 1 + 512));
    if (m === null) throw new XmlScanProblem('XML has a "<" that starts no tag (write &lt;)');
    const name = m[0];
    let j = lt + 1 + name.length;
    let quote = 0;
    for (; j < n; j++) {
      const c = text.charCodeAt(j);
      if (quote !== 0) {
        if (c === quote) quote = 0;
        else if (c === 0x3c) throw new XmlScanProblem(`XML attribute value of <${name}> holds "<"`);
      } else if (c === 0x22 || c === 0x27) quote = c;
      else if (c === 0x3e) break;
    }
    if (j >= n) throw new XmlScanProblem(`XML start tag <${name}> is not terminated`);
    const selfClosing = text.charCodeAt(j - 1) === 0x2f;
    const attrs = text.slice(lt + 1 + name.length, selfClosing ? j - 1 : j);
    checkText(attrs, `attribute value of <${name}>`);
    if (stack.length === 0 && (root !== undefined || rootClosed))
      throw new XmlScanProblem('XML has more than one root element');
    const depth = stack.length;
    if (depth + 1 > maxDepth) throw new XmlScanProblem(`XML nesting is deeper than ${maxDepth} elements`);
    let span: XmlElementSpan | undefined;
    if (depth <= recordDepth) {
      span = { name, local: localName(name), depth, start: lt, openEnd: j + 1, closeStart: j + 1, end: j + 1, attrs };
      elements.push(span);
      if (depth === 0) root = span;
    }
    if (selfClosing) {
      if (depth === 0) rootClosed = true;
    } else stack.push(span === undefined ? { name } : { name, span });
    i = j + 1;
  }
  if (stack.length > 0) throw new XmlScanProblem(`XML element <${stack[stack.length - 1]!.name}> is not closed`);
  if (root === undefined) throw new XmlScanProblem('XML has no root element');
  return { root, elements };
}

const XMLNS_ATTR = /\sxmlns(?::([\w.-]+))?\s*=\s*("([^"]*)"|'([^']*)')/g;

/** Namespace declarations of a start tag's attribute text: prefix ('' for the default) to URI. */
export function namespaceDeclarations(attrs: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of attrs.matchAll(XMLNS_ATTR)) out.set(m[1] ?? '', m[3] ?? m[4] ?? '');
  return out;
}
