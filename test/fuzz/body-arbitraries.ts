/**
 * Request bodies for the HTTP fuzzer, as byte strings (one char per byte) with the Content-Type that
 * would announce them: random and hostile JSON (keys such as __proto__, nesting past the 128 limit,
 * huge numbers, lone surrogates, invalid UTF-8, truncation), XML (DOCTYPEs, entities, character
 * references XML forbids, nesting past 64), SOAP envelopes, connector events, UI forms and garbage.
 */
import fc from 'fast-check';

/** A body and the media type that fits it (the request may still send another). */
export interface BodySample {
  readonly body: string;
  readonly contentType: string;
}

/** A JavaScript string as its UTF-8 bytes, one char per byte. */
export const utf8Bytes = (text: string): string => Buffer.from(text, 'utf8').toString('latin1');

/** Keys that are ordinary data in JSON but special to JavaScript objects. */
export const PROTOTYPE_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  '__defineGetter__',
  'then',
  'toJSON',
  'length',
] as const;

const keyText = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(...PROTOTYPE_KEYS, 'id', 'amount', 'n', 'event_type').map((k) => JSON.stringify(k)),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 10 }).map((k) => JSON.stringify(k)) },
  { weight: 1, arbitrary: fc.constantFrom('"\\u0000"', '""', '"\\ud800"', '"a.b"', '"{{ ctx.input }}"', '"a\\"b"') },
);

const numberText = fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
  fc.constantFrom(
    '1e400',
    '-1e400',
    '1e-400',
    '-0',
    '0.0',
    '123456789012345678901234567890',
    '9007199254740993',
    '-9223372036854775809',
    '1E+308',
    '4.9e-324',
    `1${'0'.repeat(400)}`,
  ),
);

const stringText = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 16 }).map((s) => JSON.stringify(s)) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }).map((s) => JSON.stringify(s)) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '"\\ud800"',
      '"x\\udc00"',
      '"\\u0000"',
      '"\\uffff"',
      '"<r>&#0;</r>"',
      '"{{ ctx.input }}"',
      '"${HOME}"',
      '"\\\\"',
      '""',
    ),
  },
);

const leafText = fc.oneof(
  { weight: 2, arbitrary: numberText },
  { weight: 3, arbitrary: stringText },
  { weight: 1, arbitrary: fc.constantFrom('true', 'false', 'null') },
);

/** JSON text built as text, so duplicate keys, __proto__ keys and raw number literals survive as sent. */
const { value: jsonText } = fc.letrec<{ value: string; array: string; object: string }>((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leafText, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }).map((items) => `[${items.join(',')}]`),
  object: fc
    .array(fc.tuple(keyText, tie('value')), { maxLength: 5 })
    .map((entries) => `{${entries.map(([k, v]) => `${k}:${v}`).join(',')}}`),
}));

/** An object whose keys are all prototype names, the shape that once made the expression evaluator fail. */
const prototypeKeyedObject = fc
  .subarray([...PROTOTYPE_KEYS], { minLength: 1 })
  .chain((keys) => fc.tuple(fc.constant(keys), fc.array(leafText, { minLength: keys.length, maxLength: keys.length })))
  .map(([keys, values]) => `{"id":1,${keys.map((k, i) => `${JSON.stringify(k)}:${values[i]}`).join(',')}}`);

const depth = fc.oneof(
  fc.integer({ min: 1, max: 140 }),
  fc.constantFrom(127, 128, 129, 130, 1000, 4190, 20_000, 100_000),
);

/** Nesting around the 128 limit and far past it, closed or left open. */
const deepJson = fc
  .tuple(depth, fc.constantFrom('array', 'object', 'mixed'), fc.boolean())
  .map(([d, shape, closed]) => {
    const open = shape === 'array' ? '[' : shape === 'object' ? '{"a":' : '[{"a":';
    const close = shape === 'array' ? ']' : shape === 'object' ? '}' : '}]';
    return `${open.repeat(d)}1${closed ? close.repeat(d) : ''}`;
  });

/** Bytes that are not UTF-8, or UTF-8 dressed up oddly. */
const badUtf8Json = fc.oneof(
  fc
    .uint8Array({ minLength: 1, maxLength: 8 })
    .map((bytes) => `{"a":"${Buffer.from(bytes.map((b) => b | 0x80)).toString('latin1')}"}`),
  fc.constantFrom(
    '{"a":"\xc0\xaf"}',
    '{"a":"\xed\xa0\x80"}',
    '\xef\xbb\xbf{"id":1}',
    '{"a":"\xf4\x90\x80\x80"}',
    '\xff\xfe{\x00}\x00',
    Buffer.from('{"id":1}', 'utf16le').toString('latin1'),
  ),
);

const truncatedJson = jsonText.chain((text) => fc.nat(Math.max(0, text.length - 1)).map((cut) => text.slice(0, cut)));

const jsonBody: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: jsonText.map(utf8Bytes) },
  { weight: 3, arbitrary: prototypeKeyedObject },
  { weight: 3, arbitrary: deepJson },
  { weight: 2, arbitrary: fc.tuple(keyText, numberText).map(([k, n]) => `{${k}:${n},"amount":${n}}`) },
  { weight: 2, arbitrary: badUtf8Json },
  { weight: 2, arbitrary: truncatedJson.map(utf8Bytes) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      'null',
      '{}',
      '[]',
      '{"id":""}',
      '{"amount":-1}',
      '{"amount":"x"}',
      '{"id":1,"constructor":1}',
      '{"a":1,"a":2}',
      '{"__proto__":{"amount":-1}}',
    ),
  },
);

// --- XML -------------------------------------------------------------------------------------------

const xmlName = fc.oneof(
  fc.constantFrom('r', 'id', 'amount', 'a', 'constructor', '__proto__', 'toString', 'Envelope', 'x:y', 'xmlns'),
  fc.stringMatching(/^[a-z][a-z0-9]{0,5}$/),
);

const xmlText = fc.oneof(
  fc.string({ maxLength: 12 }).map((s) => s.replace(/[<&]/g, '')),
  fc.constantFrom(
    '&amp;',
    '&lt;&gt;',
    '&quot;&apos;',
    '&#65;',
    '&#x41;',
    ']]>',
    '{{ ctx.input }}',
    '<![CDATA[<x>&]]>',
    '<!-- c -->',
    '<?pi data?>',
  ),
);

const { element: xmlElement } = fc.letrec<{ element: string; content: string }>((tie) => ({
  element: fc
    .tuple(
      xmlName,
      fc.array(fc.tuple(fc.constantFrom('a', 'b', 'id', 'xmlns:p', '__proto__'), fc.string({ maxLength: 6 })), {
        maxLength: 2,
      }),
      tie('content'),
    )
    .map(
      ([name, attrs, content]) =>
        `<${name}${attrs.map(([k, v]) => ` ${k}="${v.replace(/[<&"]/g, '')}"`).join('')}>${content}</${name}>`,
    ),
  content: fc.oneof(
    { depthSize: 'small' },
    xmlText,
    fc.array(tie('element'), { maxLength: 3 }).map((items) => items.join('')),
  ),
}));

/** Character references, in text and in attributes, to characters XML allows and forbids. */
const charRef = fc
  .tuple(
    fc.constantFrom(
      0,
      1,
      8,
      9,
      10,
      11,
      13,
      31,
      32,
      65,
      0xd7ff,
      0xd800,
      0xdfff,
      0xe000,
      0xfffe,
      0xffff,
      0x10000,
      0x10ffff,
      0x110000,
      99_999_999_999,
    ),
    fc.boolean(),
    fc.boolean(),
  )
  .map(([n, hex, inAttribute]) => {
    const ref = hex ? `&#x${n.toString(16)};` : `&#${n};`;
    return inAttribute ? `<r a="${ref}"/>` : `<r>${ref}</r>`;
  });

const LAUGHS = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><lolz>&lol3;</lolz>`;

const hostileXml = fc.oneof(
  charRef,
  fc.constantFrom(
    LAUGHS,
    '<!DOCTYPE r [<!ENTITY a "aaaa">]><r>&a;</r>',
    '<!DOCTYPE r SYSTEM "file:///etc/passwd"><r/>',
    '<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>',
    '<r>&#0;&#xD800;&#x110000;</r>',
    '<r>&foo;</r>',
    '<r>&#;&#x;&#xZZ;&;</r>',
    '<r><a></r>',
    '<r/><r/>',
    'just text',
    '<r a="1" a="2"/>',
    '<p:r/>',
    '<?xml version="1.0" encoding="UTF-16"?><r/>',
    '<r>\x00</r>',
    '<r><![CDATA[unclosed</r>',
    '<r><!-- a -- b --></r>',
    `<r a="${'x'.repeat(70_000)}"/>`,
    '<__proto__><constructor>1</constructor><toString>2</toString></__proto__>',
    '<r><id>1</id><id>2</id><amount>-1</amount></r>',
  ),
  fc
    .tuple(fc.constantFrom(63, 64, 65, 66, 1000, 100_000), fc.boolean())
    .map(([d, closed]) => `${'<a>'.repeat(d)}x${closed ? '</a>'.repeat(d) : ''}`),
);

const xmlBody = fc.oneof(
  { weight: 3, arbitrary: xmlElement.map(utf8Bytes) },
  { weight: 3, arbitrary: hostileXml.map(utf8Bytes) },
);

// --- SOAP ------------------------------------------------------------------------------------------

const NS11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const NS12 = 'http://www.w3.org/2003/05/soap-envelope';

const soapBody = fc
  .tuple(
    fc.constantFrom(NS11, NS12, 'urn:not-soap'),
    fc.constantFrom('s', 'soap', 'env', ''),
    fc.oneof(xmlElement, hostileXml, fc.constant('')),
    fc.constantFrom('plain', 'header', 'no-body', 'two-bodies', 'doctype', 'late', 'nested'),
  )
  .map(([ns, prefix, content, shape]) => {
    const p = prefix === '' ? '' : `${prefix}:`;
    const xmlns = prefix === '' ? `xmlns="${ns}"` : `xmlns:${prefix}="${ns}"`;
    const body = `<${p}Body>${content}</${p}Body>`;
    const inner =
      shape === 'header'
        ? `<${p}Header><h ${p}mustUnderstand="1">x</h></${p}Header>${body}`
        : shape === 'no-body'
          ? ''
          : shape === 'two-bodies'
            ? `${body}${body}`
            : shape === 'nested'
              ? `<${p}Body><${p}Envelope ${xmlns}>${body}</${p}Envelope></${p}Body>`
              : body;
    const envelope = `<${p}Envelope ${xmlns}>${inner}</${p}Envelope>`;
    if (shape === 'doctype') return `<!DOCTYPE e [<!ENTITY x "y">]>${envelope}`;
    // Past the 512-byte sniff window: detected only through SOAPAction.
    if (shape === 'late') return `<!--${' '.repeat(600)}-->${envelope}`;
    return `<?xml version="1.0"?>${envelope}`;
  });

// --- Other routes' bodies --------------------------------------------------------------------------

const looseValue = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
);

const connectorEvent = fc
  .record(
    {
      event_type: fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom('connector_received', 'connector_oversized') },
        { weight: 1, arbitrary: looseValue },
      ),
      correlation_id: fc.oneof(fc.string({ maxLength: 40 }), looseValue),
      message_id: fc.oneof(fc.string({ maxLength: 20 }), looseValue),
      worker_id: fc.oneof(fc.integer(), looseValue),
      body_bytes: fc.oneof(fc.nat(), fc.constant(1e308), looseValue),
    },
    { requiredKeys: [] },
  )
  .map((event) => utf8Bytes(JSON.stringify(event)));

const formBody = fc
  .array(
    fc.tuple(
      fc.constantFrom('username', 'password', '_csrf', '__proto__[x]', 'a[b][c]', 'constructor', 'tenant', 'value'),
      fc.string({ maxLength: 12 }),
    ),
    { maxLength: 4 },
  )
  .map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'));

const garbage = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 64 }).map(utf8Bytes),
  fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('latin1')),
);

/** Above the default 1 MiB ceiling, or just at it: rare, they cost a megabyte each. */
const bigBody = fc.constantFrom(`"${'x'.repeat(1_048_574)}"`, 'x'.repeat(1_048_577), `[${'1,'.repeat(600_000)}1]`);

export const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'application/xml',
  'APPLICATION/XML',
  'text/xml',
  'text/xml; charset=utf-8',
  'application/soap+xml',
  'application/soap+xml; charset=utf-8; action="urn:x"',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'text/plain',
  'application/vnd.api+json',
  '*/*',
  '',
  ';',
  'application/xml;;;',
  'a'.repeat(2000),
] as const;

const sample = (body: fc.Arbitrary<string>, contentType: string): fc.Arbitrary<BodySample> =>
  body.map((b) => ({ body: b, contentType }));

/** A body for /run and /enqueue. */
export const flowBody: fc.Arbitrary<BodySample> = fc.oneof(
  { weight: 10, arbitrary: sample(jsonBody, 'application/json') },
  { weight: 4, arbitrary: sample(xmlBody, 'application/xml') },
  {
    weight: 4,
    arbitrary: fc
      .tuple(soapBody, fc.constantFrom('text/xml; charset=utf-8', 'application/soap+xml'))
      .map(([body, contentType]) => ({ body: utf8Bytes(body), contentType })),
  },
  { weight: 1, arbitrary: sample(garbage, 'application/json') },
  { weight: 1, arbitrary: sample(connectorEvent, 'application/json') },
  { weight: 1, arbitrary: sample(bigBody, 'application/json') },
);

/** A body for POST /connector/events. */
export const connectorBody: fc.Arbitrary<BodySample> = fc.oneof(
  { weight: 6, arbitrary: sample(connectorEvent, 'application/json') },
  { weight: 2, arbitrary: sample(jsonBody, 'application/json') },
  { weight: 1, arbitrary: sample(garbage, 'text/plain') },
  { weight: 1, arbitrary: sample(fc.constant('x'.repeat(70_000)), 'application/json') },
);

/** A body for the UI's forms. */
export const formSample: fc.Arbitrary<BodySample> = sample(formBody, 'application/x-www-form-urlencoded');

/** Any body at all, for routes that take none. */
export const anyBody: fc.Arbitrary<BodySample> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ body: '', contentType: 'application/json' }) },
  { weight: 1, arbitrary: flowBody },
  { weight: 1, arbitrary: sample(garbage, 'text/plain') },
);
