/**
 * The hostile requests issue 20 found or named, and those this fuzzer found, run first in every
 * fuzz run with the status the spec gives each; random cases follow.
 */
import { utf8Bytes } from './body-arbitraries.js';
import type { HttpCase } from './http-case.js';

const base: HttpCase = {
  route: 'run',
  method: 'POST',
  target: '/flows/acme/echo/run',
  version: 'HTTP/1.1',
  host: 'localhost',
  authorization: ['Bearer {main}'],
  contentType: 'application/json',
  signature: 'right',
  headers: [],
  body: '{}',
  framing: 'length',
  halfClose: false,
};

const known = (over: Partial<HttpCase> & Pick<HttpCase, 'expect'>): HttpCase => ({ ...base, ...over });

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const NS11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const EVENT = '{"event_type":"connector_received","message_id":"m-1"}';

export const KNOWN_CASES: readonly HttpCase[] = [
  // Keys that are ordinary JSON but special to JavaScript objects (issue 20, defect 2).
  known({ target: '/flows/acme/fields/run', body: '{"id":1,"constructor":1}', expect: [200] }),
  known({ route: 'enqueue', target: '/flows/acme/fields/enqueue', body: '{"id":1,"constructor":1}', expect: [202] }),
  known({
    target: '/flows/acme/fields/run',
    body: '{"__proto__":{"amount":-1},"toString":1,"hasOwnProperty":2,"valueOf":{}}',
    expect: [200],
  }),
  // Nesting: 128 levels pass, 129 and far more are refused before anything is stored (defect 3).
  known({ body: nested(128), expect: [200] }),
  known({ body: nested(129), expect: [400] }),
  known({ body: nested(4190), expect: [400] }),
  known({ route: 'enqueue', target: '/flows/acme/echo/enqueue', body: nested(20_000), expect: [400] }),
  known({ target: '/flows/acme/fields/run', body: `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`, expect: [400] }),
  // Character references XML forbids (defect 6), DOCTYPEs and entities.
  known({ contentType: 'application/xml', body: '<r>&#0;&#xD800;&#x110000;</r>', expect: [400] }),
  known({ contentType: 'application/xml', body: '<!DOCTYPE r [<!ENTITY a "aaaa">]><r>&a;</r>', expect: [400] }),
  // The same characters written literally (item 9.1): refused by the one scan as well.
  known({ contentType: 'application/xml', body: '<r>a\u0000b</r>', expect: [400] }),
  known({ contentType: 'application/xml', body: '<r k="\u000B"/>', expect: [400] }),
  // Bodies are byte strings: U+FFFE and U+FFFF go as their UTF-8 bytes.
  known({ contentType: 'application/xml', body: utf8Bytes('<r>\uFFFE\uFFFF</r>'), expect: [400] }),
  known({
    route: 'enqueue',
    target: '/flows/acme/echo/enqueue',
    contentType: 'application/xml',
    body: '<r>\u001F</r>',
    expect: [400],
  }),

  known({
    contentType: 'application/xml',
    body: '<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>',
    expect: [400],
  }),
  known({ contentType: 'application/xml', body: `${'<a>'.repeat(65)}x${'</a>'.repeat(65)}`, expect: [400] }),
  known({
    target: '/flows/acme/soapy/run',
    contentType: 'text/xml; charset=utf-8',
    body: `<!DOCTYPE e [<!ENTITY x "y">]><s:Envelope xmlns:s="${NS11}"><s:Body>&x;</s:Body></s:Envelope>`,
    expect: [400],
  }),
  // The connector route reads JSON whatever the Content-Type says (defect 7).
  known({
    route: 'connector',
    target: '/connector/events/acme/echo',
    contentType: 'text/plain',
    signature: 'none',
    body: EVENT,
    expect: [202],
  }),
  known({
    route: 'connector',
    target: '/connector/events/acme/echo',
    contentType: '',
    signature: 'none',
    body: EVENT,
    expect: [202],
  }),
  known({
    route: 'connector',
    target: '/connector/events/acme/echo',
    contentType: null,
    signature: 'none',
    body: EVENT,
    expect: [202],
  }),
  // More than one Authorization header is refused on every gated route (defect 8).
  known({ authorization: ['Bearer {main}', 'Bearer {main}'], expect: [401] }),
  known({ authorization: ['Bearer {foreign}', 'Bearer {main}'], expect: [401] }),
  known({
    route: 'metadata',
    method: 'GET',
    target: '/flows/acme/echo',
    authorization: ['Bearer {main}', 'Bearer {main}'],
    body: '',
    expect: [401],
  }),
  known({
    route: 'connector',
    target: '/connector/events/acme/echo',
    authorization: ['Bearer {main}', 'Bearer {main}'],
    body: EVENT,
    expect: [401],
  }),
  // A body that never finishes: 408 after request_body_timeout_secs (defect 9).
  known({ framing: 'length-long', expect: [408] }),
  // Ceilings: a declared length over 1 MiB is refused unread; the small flow's 100 bytes.
  known({ headers: [['Content-Length', '2000000']], framing: 'none', body: '', expect: [413] }),
  known({ target: '/flows/acme/small/run', body: `{"pad":"${'x'.repeat(200)}"}`, expect: [413] }),
  // Huge numbers, invalid UTF-8, prototype-named headers.
  known({
    target: '/flows/acme/fields/run',
    body: '{"id":1e400,"amount":123456789012345678901234567890}',
    expect: [200],
  }),
  known({ body: '{"a":"\xff\xfe\xc0\xaf"}', expect: [200, 400] }),
  known({
    target: '/flows/acme/headers/run',
    headers: [
      ['__proto__', '{"a":1}'],
      ['constructor', '1'],
      ['toString', 'x'],
    ],
    expect: [200],
  }),
  // The gate's answers, and the two 5xx the fuzz flows may give by the spec.
  known({ authorization: ['Bearer {revoked}'], expect: [401] }),
  known({ target: '/flows/acme/fields/run', authorization: ['Bearer {narrow}'], expect: [403] }),
  known({ target: '/flows/gone/echo/run', authorization: ['Bearer {gone}'], expect: [404] }),
  known({ signature: 'wrong', expect: [401] }),
  known({ target: '/flows/acme/boom/run', expect: [500] }),
  known({
    target: '/flows/acme/soapy/run',
    contentType: 'text/xml; charset=utf-8',
    headers: [['X-Mode', 'refuse']],
    body: `<s:Envelope xmlns:s="${NS11}"><s:Body><a/></s:Body></s:Envelope>`,
    expect: [500],
  }),
  // Paths: a bad escape, a traversal, an unknown route, the WSDL with a hostile Host.
  known({ target: '/flows/acme/%ZZ/run', expect: [400] }),
  known({ target: '/flows/acme/..%2F..%2Fetc/run', expect: [400] }),
  known({ route: 'unknown', target: '/run/acme/echo', expect: [404] }),
  known({
    route: 'wsdl',
    method: 'GET',
    target: '/flows/acme/soapy/wsdl',
    host: '"/><inject/>',
    authorization: [],
    body: '',
    expect: [200],
  }),
  known({ route: 'health', method: 'GET', target: '/health', authorization: [], body: '', expect: [200] }),
  // A repeated query parameter on a UI filter once reached the event-log query as two values (500; found by this fuzzer).
  known({
    route: 'ui',
    method: 'GET',
    target: '/ui/executions?flow=a&flow=b&tenant=x&tenant=y',
    authorization: [],
    headers: [['Cookie', 'svc_ui={session}']],
    body: '',
    expect: [200],
  }),
];
