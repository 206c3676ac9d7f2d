/**
 * Whole requests for the HTTP fuzzer: a route template aimed at (every route of the spec, the UI,
 * and routes that do not exist), path components from ordinary to hostile (encoded, `..`, NUL,
 * unicode, overlong), methods including odd ones, headers (Authorization repeated or malformed,
 * huge values, prototype names), framings that lie, and a body from body-arbitraries.ts.
 */
import fc from 'fast-check';
import {
  anyBody,
  CONTENT_TYPES,
  connectorBody,
  flowBody,
  formSample,
  utf8Bytes,
  type BodySample,
} from './body-arbitraries.js';
import type { Framing, HttpCase } from './http-case.js';

/** The flows fuzz-target.ts deploys for tenant acme. */
export const FUZZ_FLOWS = ['echo', 'fields', 'headers', 'boom', 'small', 'soapy', 'scoped'] as const;

const validName = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,127}$/);

/** A path component the name rule refuses, or one that only looks odd. */
const hostileComponent = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      '..',
      '.',
      '%2e%2e',
      '%2E%2E%2F',
      '%2F',
      'a%2Fb',
      '%00',
      'a%00b',
      '%ZZ',
      '%',
      '%C0%AF',
      '%C3%A9',
      '%E2%80%AE',
      '%61cme',
      'ech%6F',
      'ACME',
      'Echo',
      '-x',
      '_x',
      'a'.repeat(128),
      'a'.repeat(129),
      'a'.repeat(5000),
      '%20',
      'a;b',
      'a,b',
      '~',
      '$',
      '__proto__',
      'constructor',
      '%5F%5Fproto%5F%5F',
    ),
  },
  { weight: 2, arbitrary: fc.webSegment() },
  // Raw bytes Node's parser refuses in a request line (400 before any route): now and then.
  { weight: 1, arbitrary: fc.constantFrom('é', 'İ', '😀', '\u202e', 'ａ', 'a\u0301').map(utf8Bytes) },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.constantFrom('\x00', '\xff', '\xc0\xaf', 'a b', 'a\tb', 'a\rb'),
      fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 6 }),
    ),
  },
);

const tenant = fc.oneof(
  { weight: 16, arbitrary: fc.constant('acme') },
  { weight: 2, arbitrary: fc.constantFrom('beta', 'gone', 'nobody') },
  { weight: 2, arbitrary: hostileComponent },
);

const flowName = fc.oneof(
  { weight: 14, arbitrary: fc.constantFrom(...FUZZ_FLOWS) },
  { weight: 2, arbitrary: fc.constant('nope') },
  { weight: 1, arbitrary: validName },
  { weight: 2, arbitrary: hostileComponent },
);

const uiPath = fc.oneof(
  fc.constantFrom(
    '',
    '/',
    '/login',
    '/logout',
    '/registry',
    '/executions',
    '/traces',
    '/queues',
    '/tenants',
    '/keys',
    '/audit',
    '/users',
    '/certificates',
    '/settings',
    '/assets/ui.css',
    '/../health',
    '/%2e%2e/health',
    '/nope',
  ),
  fc.tuple(tenant, flowName).map(([t, f]) => `/registry/${t}/${f}`),
  hostileComponent.map((c) => `/executions/${c}`),
  hostileComponent.map((c) => `/users/${c}/disable`),
);

const uiQuery = fc.constantFrom(
  '?page=-1',
  '?page=1e309',
  '?page=99999999999999999999',
  '?tenant=__proto__',
  '?tenant=%00',
  '?limit=-5',
  '?notice=%3Cscript%3E',
  '?version=x',
  '?a[b]=1',
  '?__proto__[x]=1',
  '?flow=a&flow=b',
  '?status=all',
  '?correlation_id=%ff',
);

interface RouteChoice {
  readonly route: string;
  readonly path: fc.Arbitrary<string>;
  /** The method the route expects. */
  readonly method: string;
  readonly body: fc.Arbitrary<BodySample>;
  /** True: the route is behind the key gate (Authorization matters). */
  readonly gated: boolean;
  /** True: a UI route, which mostly carries the logged-in session's cookie. */
  readonly ui?: boolean;
}

const flowPath = (suffix: string) => fc.tuple(tenant, flowName).map(([t, f]) => `/flows/${t}/${f}${suffix}`);

const ROUTES: readonly { weight: number; arbitrary: fc.Arbitrary<RouteChoice> }[] = [
  {
    weight: 30,
    arbitrary: fc.constant({ route: 'run', path: flowPath('/run'), method: 'POST', body: flowBody, gated: true }),
  },
  {
    weight: 12,
    arbitrary: fc.constant({
      route: 'enqueue',
      path: flowPath('/enqueue'),
      method: 'POST',
      body: flowBody,
      gated: true,
    }),
  },
  {
    weight: 6,
    arbitrary: fc.constant({ route: 'metadata', path: flowPath(''), method: 'GET', body: anyBody, gated: true }),
  },
  {
    weight: 6,
    arbitrary: fc.constant({ route: 'wsdl', path: flowPath('/wsdl'), method: 'GET', body: anyBody, gated: false }),
  },
  {
    weight: 8,
    arbitrary: fc.constant({
      route: 'connector',
      path: fc.tuple(tenant, flowName).map(([t, f]) => `/connector/events/${t}/${f}`),
      method: 'POST',
      body: connectorBody,
      gated: true,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.constant({
      route: 'health',
      path: fc.constant('/health'),
      method: 'GET',
      body: anyBody,
      gated: false,
    }),
  },
  {
    weight: 6,
    arbitrary: fc.constant({
      route: 'ui',
      path: fc.tuple(uiPath, fc.option(uiQuery, { nil: '' })).map(([p, q]) => `/ui${p}${q}`),
      method: 'GET',
      body: anyBody,
      gated: false,
      ui: true,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.constant({
      route: 'ui-form',
      path: uiPath.map((p) => `/ui${p}`),
      method: 'POST',
      body: formSample,
      gated: false,
      ui: true,
    }),
  },
  {
    weight: 6,
    arbitrary: fc.constant({
      route: 'unknown',
      path: fc.oneof(
        fc.tuple(tenant, flowName).map(([t, f]) => `/run/${t}/${f}`),
        fc.tuple(tenant, flowName).map(([t, f]) => `/enqueue/${t}/${f}`),
        flowName.map((f) => `/soap/${f}`),
        fc.constantFrom(
          '/soap',
          '/',
          '/flows',
          '/flows/acme',
          '/connector/events',
          '/connector/events/acme',
          '/flows/acme/echo/run/x',
          '/flows/acme/echo/wsdl/',
          '/echo?wsdl',
          '/health/',
          '/HEALTH',
        ),
        fc.webPath(),
      ),
      method: 'POST',
      body: flowBody,
      gated: false,
    }),
  },
];

/** Odd decorations of a path: query strings, fragments, slashes, absolute and asterisk forms. */
const decoratedTarget = (path: string) =>
  fc.oneof(
    { weight: 40, arbitrary: fc.constant(path) },
    {
      weight: 4,
      arbitrary: fc
        .constantFrom('?x=1', '?wsdl', '?__proto__[a]=1', '?', `?${'q'.repeat(9000)}`, '?a=%ZZ')
        .map((q) => `${path}${q}`),
    },
    { weight: 1, arbitrary: fc.constant(`${path}#frag`) },
    { weight: 1, arbitrary: fc.constant(`${path}/`) },
    { weight: 1, arbitrary: fc.constant(`/${path}`) },
    { weight: 1, arbitrary: fc.constant(`http://localhost${path}`) },
    { weight: 1, arbitrary: fc.constant(path.replace(/\//g, '\\')) },
    { weight: 1, arbitrary: fc.constant('*') },
  );

const ODD_METHODS = [
  'GET',
  'POST',
  'HEAD',
  'PUT',
  'DELETE',
  'PATCH',
  'OPTIONS',
  'TRACE',
  'PROPFIND',
  'SEARCH',
  'QUERY',
  'get',
  'FOO',
  'M-SEARCH',
  'CONNECT',
  '',
  'POST\x00',
] as const;

const method = (natural: string) =>
  fc.oneof({ weight: 12, arbitrary: fc.constant(natural) }, { weight: 1, arbitrary: fc.constantFrom(...ODD_METHODS) });

const version = fc.oneof(
  { weight: 40, arbitrary: fc.constant('HTTP/1.1') },
  { weight: 1, arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/1.2', 'HTTP/0.9', 'http/1.1', 'HTTP/1.1 x') },
);

const host = fc.oneof(
  { weight: 30, arbitrary: fc.constant('localhost') },
  { weight: 1, arbitrary: fc.constant(null) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      'evil.example:1',
      '<x a="b">&amp;\'',
      'a'.repeat(3000),
      '[::1]',
      'localhost:99999',
      '{{ ctx.input }}',
      '"/><inject/>',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom('é.example', 'xn--e.example').map(utf8Bytes) },
);

const authorization = (gated: boolean) =>
  fc.oneof(
    { weight: gated ? 60 : 3, arbitrary: fc.constant(['Bearer {main}']) },
    { weight: gated ? 2 : 6, arbitrary: fc.constant([]) },
    {
      weight: 4,
      arbitrary: fc.constantFrom('narrow', 'throttled', 'foreign', 'revoked', 'gone').map((k) => [`Bearer {${k}}`]),
    },
    {
      weight: 4,
      arbitrary: fc
        .constantFrom(
          'bearer {main}',
          'BEARER {main}',
          'Bearer  {main}',
          'Bearer {main} x',
          ' Bearer {main}',
          'Basic Zm9vOmJhcg==',
          'Bearer',
          'Bearer ',
          '',
          'Bearer svk_00000000000000000000000000000000',
          `Bearer ${'a'.repeat(10_000)}`,
          'Bearer {main}\x00',
        )
        .map((v) => [v]),
    },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        ['Bearer {main}', 'Bearer {main}'],
        ['Bearer {main}', 'Bearer {foreign}'],
        ['Bearer {revoked}', 'Bearer {main}'],
        ['Bearer {main}', ''],
        ['Bearer {main}', 'Bearer {main}', 'Bearer {main}'],
      ),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 20 }).map((v) => [`Bearer ${v}`]) },
  );

/** The logged-in UI session (fuzz-target.ts logs in before the run). */
const SESSION_COOKIE = ['Cookie', 'svc_ui={session}'] as const;

/** One extra header line. */
const extraHeader: fc.Arbitrary<readonly [string, string]> = fc.oneof(
  fc.tuple(
    fc.constantFrom('X-Correlation-ID', 'X-Request-ID'),
    fc.oneof(
      fc.uuid(),
      fc.string({ maxLength: 20 }),
      fc.constant('x'.repeat(8000)),
      fc.constant(''),
      fc.constant(utf8Bytes('é😀')),
    ),
  ),
  fc.tuple(fc.constant('SOAPAction'), fc.constantFrom('', '""', '"urn:x"', 'urn:y', '"unterminated')),
  fc.constant(['Expect', '100-continue'] as const),
  fc.constantFrom(
    ['Connection', 'close'],
    ['Connection', 'keep-alive'],
    ['Connection', 'x-hop, te'],
    ['Connection', 'Upgrade'],
    ['Upgrade', 'websocket'],
    ['Keep-Alive', 'timeout=1'],
    ['TE', 'trailers'],
    ['Trailer', 'x'],
  ),
  fc.tuple(
    fc.constantFrom(
      '__proto__',
      'constructor',
      'toString',
      'hasOwnProperty',
      'x-__proto__',
      'X-Mode',
      'x-mode',
      'Cookie',
      'X-Api-Key',
      'Proxy-Authorization',
    ),
    fc.constantFrom('1', 'refuse', '{"a":1}', ''),
  ),
  fc.constantFrom(
    ['X-Forwarded-Proto', 'https'],
    ['X-Forwarded-Proto', 'gopher, https'],
    ['X-Forwarded-For', '1.2.3.4, ::1'],
    ['Content-Encoding', 'gzip'],
    ['Accept', '*/*;q=x'],
    ['Content-Type', 'text/xml'],
    ['X-Svc-Signature', 'zz'],
  ),
  fc.constant(SESSION_COOKIE),
  fc.tuple(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,20}$/), fc.string({ maxLength: 30 })),
);

/** Many headers at once, now and then past Node's 16 KiB head limit. */
const extraHeaders = fc.oneof(
  { weight: 40, arbitrary: fc.array(extraHeader, { maxLength: 4 }) },
  {
    weight: 1,
    arbitrary: fc
      .nat({ max: 2 })
      .map((n) => Array.from({ length: 60 + 100 * n }, (_, i) => [`X-Many-${i}`, 'v'.repeat(40)] as const)),
  },
  {
    weight: 1,
    arbitrary: fc.constant([
      ['X-Huge', 'h'.repeat(9000)],
      ['X-Huge-2', 'h'.repeat(9000)],
    ] as const),
  },
);

const framing = fc.oneof(
  { weight: 100, arbitrary: fc.constant<Framing>('length') },
  { weight: 12, arbitrary: fc.constant<Framing>('chunked') },
  { weight: 6, arbitrary: fc.constant<Framing>('none') },
  { weight: 5, arbitrary: fc.constant<Framing>('length-short') },
  { weight: 2, arbitrary: fc.constant<Framing>('length-long') },
  { weight: 1, arbitrary: fc.constant<Framing>('chunked-open') },
);

const contentType = (natural: string) =>
  fc.oneof(
    { weight: 8, arbitrary: fc.constant<string | null>(natural) },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 2, arbitrary: fc.constantFrom<string | null>(...CONTENT_TYPES) },
  );

/** A whole request. */
export const httpCase: fc.Arbitrary<HttpCase> = fc.oneof(...ROUTES).chain((choice) =>
  fc
    .record({
      path: choice.path.chain(decoratedTarget),
      method: method(choice.method),
      version,
      host,
      authorization: authorization(choice.gated),
      sample: choice.method === 'GET' ? anyBody : choice.body,
      signature: fc.oneof(
        { weight: 16, arbitrary: fc.constant<'right'>('right') },
        { weight: 1, arbitrary: fc.constantFrom<'wrong' | 'none'>('wrong', 'none') },
      ),
      headers:
        choice.ui === true
          ? fc.tuple(fc.nat(4), extraHeaders).map(([roll, h]) => (roll === 0 ? h : [SESSION_COOKIE, ...h]))
          : extraHeaders,
      framing,
      halfClose: fc.oneof({ weight: 30, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    })
    .chain((r) =>
      contentType(r.sample.contentType).map((ct): HttpCase => ({
        route: choice.route,
        method: r.method,
        target: r.path,
        version: r.version,
        host: r.host,
        authorization: r.authorization,
        contentType: ct,
        signature: r.signature,
        headers: r.headers,
        body: r.sample.body,
        framing: r.framing,
        halfClose: r.halfClose,
      })),
    ),
);
