import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCodes } from './errors.js';
import { readEnvelope } from './soap-envelope.js';
import { checkXml, decodeXmlText, DOCTYPE_REFUSED, escapeXml, parseXmlValue, XmlError, xmlToJson } from './xml.js';

const BILLION_LAUGHS = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<lolz>&lol3;</lolz>`;

const XXE = `<?xml version="1.0"?>
<!DOCTYPE foo [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
<foo>&xxe;</foo>`;

function refusal(fn: () => unknown): XmlError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof XmlError, `expected XmlError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a refusal');
}

test('a billion-laughs document is refused with the DOCTYPE error and status 400', () => {
  for (const fn of [() => parseXmlValue(BILLION_LAUGHS), () => xmlToJson(BILLION_LAUGHS)]) {
    const err = refusal(fn);
    assert.equal(err.message, DOCTYPE_REFUSED);
    assert.equal(err.status, 400);
    assert.equal(err.code, 'SVC_ERR_INVALID_XML');
  }
  assert.equal(ErrorCodes.SVC_ERR_INVALID_XML, 400);
});

test('an XXE document is refused before any entity is resolved', () => {
  assert.equal(refusal(() => xmlToJson(XXE)).message, DOCTYPE_REFUSED);
  // lowercase spelling too
  assert.equal(refusal(() => parseXmlValue('<!doctype a><a/>')).message, DOCTYPE_REFUSED);
});

test('an entity declaration outside a DOCTYPE and an undefined entity reference are refused', () => {
  assert.match(refusal(() => parseXmlValue('<!ENTITY x "y"><a/>')).message, /markup declarations/);
  assert.match(refusal(() => parseXmlValue('<a>&xxe;</a>')).message, /undefined entity reference/);
  assert.match(refusal(() => parseXmlValue('<a b="&x;"/>')).message, /undefined entity reference/);
});

test('nesting deeper than 64 elements is refused, 64 is accepted', () => {
  const deep = (n: number) => '<a>'.repeat(n) + '</a>'.repeat(n);
  assert.equal(parseXmlValue(deep(64)).root, 'a');
  assert.match(refusal(() => parseXmlValue(deep(65))).message, /deeper than 64/);
});

test('a document over the byte ceiling is refused naming the ceiling', () => {
  assert.match(
    refusal(() => parseXmlValue(`<a>${'x'.repeat(100)}</a>`, { maxBytes: 50 })).message,
    /larger than 50 bytes/,
  );
});

test('malformed documents get a clear error', () => {
  assert.match(refusal(() => parseXmlValue('<a><b></a>')).message, /does not match/);
  assert.match(refusal(() => parseXmlValue('<a>')).message, /not closed/);
  assert.match(refusal(() => parseXmlValue('<a/><b/>')).message, /more than one root/);
  assert.match(refusal(() => parseXmlValue('hello')).message, /text outside the root/);
  assert.match(refusal(() => parseXmlValue('')).message, /no root element/);
  assert.match(refusal(() => parseXmlValue('<a x="1" x="2"/>')).message, /malformed XML|duplicate|repeated/i);
});

test('parseXmlValue keeps the text verbatim and names the root by its local name', () => {
  const text = '<?xml version="1.0"?>\n<ns1:Order xmlns:ns1="urn:o"><id>7</id></ns1:Order>';
  const v = parseXmlValue(text);
  assert.equal(v.xml, text);
  assert.equal(v.root, 'Order');
  assert.equal(parseXmlValue('<Order><!-- c --><![CDATA[<x>]]></Order>').root, 'Order');
});

test('xmlToJson drops the root, makes repeated children arrays and keeps text as strings', () => {
  const json = xmlToJson(
    '<order xmlns:p="urn:p" id="9"><p:item>a</p:item><item>b</item><qty>007</qty><note/><t lang="en">hi &amp; &#65;&#x42;</t></order>',
  );
  assert.deepEqual(json, {
    '@id': '9',
    item: ['a', 'b'],
    qty: '007',
    note: '',
    t: { '#text': 'hi & AB', '@lang': 'en' },
  });
  assert.deepEqual(xmlToJson('<empty/>'), {});
  assert.equal(xmlToJson('<greeting>hello</greeting>'), 'hello');
});

test('xmlToJson refuses an element named __proto__ instead of polluting prototypes', () => {
  assert.match(refusal(() => xmlToJson('<r><__proto__>x</__proto__></r>')).message, /cannot be converted/);
  assert.equal(({} as Record<string, unknown>).x, undefined);
});

test('escapeXml and decodeXmlText round-trip the special characters', () => {
  const s = `<a href="x">'&'</a>`;
  assert.equal(decodeXmlText(escapeXml(s)), s);
  assert.equal(checkXml(`<v>${escapeXml(s)}</v>`).root.local, 'v');
});

test('a character reference to a character XML forbids is malformed (400); allowed ones, with leading zeros too, pass', () => {
  for (const bad of ['&#0;', '&#xD800;', '&#x110000;', '&#1;', '&#xFFFE;', '&#99999999999999999999;']) {
    assert.throws(
      () => checkXml(`<r>a${bad}b</r>`),
      (e: unknown) => e instanceof XmlError && ErrorCodes[e.code] === 400 && e.message.includes(bad),
      bad,
    );
    assert.throws(() => checkXml(`<r k="${bad}"/>`), XmlError, `attribute ${bad}`);
  }
  for (const good of ['&#9;', '&#xA;', '&#65;', '&#0000065;', '&#x1F600;', '&#xFFFD;', '&#x10FFFF;'])
    assert.doesNotThrow(() => checkXml(`<r>${good}</r>`), good);
});

/** Literal characters outside XML 1.0's Char production, as a probe sent them (raw, not references). */
const FORBIDDEN_LITERALS: readonly [string, string][] = [
  ['NUL', '\u0000'],
  ['U+0001', '\u0001'],
  ['U+0008', '\u0008'],
  ['U+000B', '\u000B'],
  ['U+000C', '\u000C'],
  ['U+000E', '\u000E'],
  ['U+001F', '\u001F'],
  ['U+FFFE', '\uFFFE'],
  ['U+FFFF', '\uFFFF'],
  ['a lone high surrogate', '\uD800'],
  ['a lone low surrogate', '\uDFFF'],
];

/** Every place a character can sit in a document, and every entry point that parses one. */
const PLACES: readonly [string, (c: string) => string][] = [
  ['text', (c) => `<r>a${c}b</r>`],
  ['an attribute value', (c) => `<r k="a${c}b"/>`],
  ['a comment', (c) => `<r><!-- ${c} --></r>`],
  ['a CDATA section', (c) => `<r><![CDATA[${c}]]></r>`],
  ['a processing instruction', (c) => `<?pi ${c}?><r/>`],
  ['whitespace outside the root', (c) => `<r/>${c}`],
];
const ENTRY_POINTS: readonly [string, (xml: string) => unknown][] = [
  ['checkXml', (xml) => checkXml(xml)],
  ['parseXmlValue', (xml) => parseXmlValue(xml)],
  ['xmlToJson', (xml) => xmlToJson(xml)],
  ['readEnvelope (SOAP)', (xml) => readEnvelope(xml)],
];

test('a literal character XML forbids is malformed XML (400) wherever it sits, through every entry point', () => {
  for (const [name, c] of FORBIDDEN_LITERALS) {
    const hex = c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    for (const [where, doc] of PLACES) {
      for (const [entry, parse] of ENTRY_POINTS) {
        assert.throws(
          () => parse(doc(c)),
          (e: unknown) => e instanceof XmlError && ErrorCodes[e.code] === 400 && e.message.includes(`U+${hex}`),
          `${name} in ${where} through ${entry}`,
        );
      }
    }
  }
});

test('tab, LF, CR, a BOM, U+FFFD and characters past U+FFFF (surrogate pairs) are still accepted', () => {
  for (const [name, c] of [
    ['tab', '\t'],
    ['LF', '\n'],
    ['CR', '\r'],
    ['U+FFFD', '\uFFFD'],
    ['an emoji', '\u{1F600}'],
    ['U+10FFFF', '\u{10FFFF}'],
    ['U+E000', '\uE000'],
    ['U+D7FF', '\uD7FF'],
    ['text', 'plain text, é and 漢字'],
  ] as const) {
    for (const [where, doc] of PLACES) {
      // Only whitespace may stand outside the root, whatever characters XML allows.
      if (where === 'whitespace outside the root' && c.trim() !== '') continue;
      assert.doesNotThrow(() => checkXml(doc(c)), `${name} in ${where}`);
    }
  }
  assert.equal(parseXmlValue('\uFEFF<r>x</r>').root, 'r');
  assert.deepEqual(xmlToJson('<r><a>1\t2</a></r>'), { a: '1\t2' });
});
