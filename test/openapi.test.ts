/**
 * Black-box: GET /openapi.json is a structurally sound OpenAPI 3.1 document, and it is true of the
 * running server. Every documented operation and status is provoked against the real `svc serve`
 * (or named below with the reason it cannot be), each answer is held against the document
 * (status, headers, Content-Type, body schema), and every route the server answers is documented.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Schema, valueProblems } from './helpers/json-schema-subset.js';
import { deref, HTTP_METHODS, openApiProblems } from './helpers/openapi-check.js';
import { answerFromRaw, ConformanceChecker, type Answer } from './helpers/openapi-conformance.js';
import { rawRequest, requestWithHeaders, sign } from './helpers/raw-http.js';
import {
  corruptArtifact,
  createKey,
  createTenant,
  deployAll,
  deployFlow,
  flow,
  setSystemConfig,
  setTenantEnabled,
  withRegistry,
} from './helpers/registry-setup.js';
import { makeSandbox, ON_PG_STORE, onlyOn, startServer, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SECRET = 'openapi-test-secret';
/** max_concurrent_flow_executions for this server: the busy probes take every slot, the closing test holds one per route. */
const SLOTS = 12;

const RUN = '/flows/{tenant}/{name}/run';
const ENQUEUE = '/flows/{tenant}/{name}/enqueue';
const METADATA = '/flows/{tenant}/{name}';
const WSDL = '/flows/{tenant}/{name}/wsdl';
const CONNECTOR = '/connector/events/{tenant}/{flow}';
const HEALTH = '/health';
const OPENAPI = '/openapi.json';

/** Every route the server answers, by method and path template (the management UI under /ui/ aside, below). */
const SERVED = [
  `POST ${RUN}`,
  `POST ${ENQUEUE}`,
  `GET ${METADATA}`,
  `HEAD ${METADATA}`,
  `GET ${WSDL}`,
  `HEAD ${WSDL}`,
  `POST ${CONNECTOR}`,
  `GET ${HEALTH}`,
  `HEAD ${HEALTH}`,
  `GET ${OPENAPI}`,
  `HEAD ${OPENAPI}`,
];

/** max_queues_per_tenant of the server: tenant `full` passes it (acme's probes stay far below). */
const QUEUE_BOUND = 20;

/** Documented statuses no probe provokes, with the reason. */
const NOT_PROVOKED = new Map<string, string>([
  [
    `POST ${CONNECTOR} 500`,
    'an unexpected failure only: the event goes to an in-memory batch, and nothing a caller or the state directory can do makes the route fail',
  ],
]);

/** Documented response media types no probe provokes, with the reason. */
const MEDIA_NOT_PROVOKED = new Map<string, string>(
  [
    'text/plain; charset=utf-8',
    'application/xml; charset=utf-8',
    'text/xml; charset=utf-8',
    'application/soap+xml; charset=utf-8',
  ].map((m) => [
    `POST ${RUN} default ${m}`,
    'a flow-chosen status is encoded exactly like 200 (the output decides the type), and every type is provoked under 200',
  ]),
);

const NS11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const NS12 = 'http://www.w3.org/2003/05/soap-envelope';
const env11 = (body: string) =>
  `<?xml version="1.0"?><s:Envelope xmlns:s="${NS11}"><s:Body>${body}</s:Body></s:Envelope>`;
const env12 = (body: string) => `<env:Envelope xmlns:env="${NS12}"><env:Body>${body}</env:Body></env:Envelope>`;
const SOAP_KEYS = (op: string) => `soap_operation: ${op}\nsoap_namespace: urn:test:${op.toLowerCase()}`;
/** A mode header the SOAP flow reads, so one flow fails each way on request. */
const MODE = (mode: string, kind: string) => `!('x-mode' in ctx.headers) || ctx.headers['x-mode'] != '${mode}'${kind}`;

const FLOWS = [
  flow(
    'acme',
    'soapy',
    SOAP_KEYS('Check'),
    `## Step: check\n\`\`\`validate\n${MODE('syn', ' | syntax broken | syntactic')}\n${MODE('sem', ' | meaning broken | semantic')}\n${MODE('defect', " || int('x') == 1 | never | semantic")}\n\`\`\`\n\n## Step: answer\n\`\`\`ntd\n<Checked xmlns="urn:test:check"/>\n\`\`\``,
  ),
  flow(
    'acme',
    'soap-call',
    `effects: [http_egress]\n${SOAP_KEYS('Call')}`,
    '## Step: call\neffects: [http_egress]\nendpoint: http://127.0.0.1:1/nothing\nconnect_timeout_ms: 500',
  ),
  flow('acme', 'soap-corrupt', SOAP_KEYS('Broken'), '## Step: answer\n```ntd\n<ok/>\n```'),
  flow(
    'acme',
    'held',
    `dedup_key: ctx.headers['x-key']\neffects: [http_egress]\n${SOAP_KEYS('Hold')}`,
    '## Step: call\neffects: [http_egress]\nendpoint: ${SLOW_URL}/held\nmethod: POST\nread_timeout_ms: 30000',
  ),
  flow(
    'acme',
    'memo',
    'dedup_key: ctx.input.id\ndedup_memoize_response: true',
    '## Step: answer\n```ntd\n{"id": "{{ ctx.input.id }}"}\n```',
  ),
];

interface Req {
  readonly method?: string;
  readonly path: string;
  /** The API key; null: no Authorization header. @default the tenant's unrestricted key */
  readonly key?: string | null;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** Sign the body of /run and /enqueue with the server's secret. @default true */
  readonly sign?: boolean;
}

interface Probe {
  /** `METHOD /path template`; a GET probe runs as HEAD too. */
  readonly op: string;
  /** The documented response it must land on: a status or `default`. */
  readonly status: string;
  readonly what: string;
  send(method: string): Promise<Answer>;
  /** What this case must show beyond the document (a header the document marks optional). */
  also?(answer: Answer): void;
  /** Why the case does not run in this pass (`onlyOn`): it breaks the store in a way only one store has. */
  readonly skip?: string;
}

describe('GET /openapi.json, held against the running server', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let backend: Server;
  let doc: Record<string, unknown>;
  let checker: ConformanceChecker;
  const keys: Record<'all' | 'reader' | 'echoOnly' | 'limited' | 'gone' | 'full', string> = {
    all: '',
    reader: '',
    echoOnly: '',
    limited: '',
    gone: '',
    full: '',
  };
  /** Calls the backend holds until released: /run executions kept in flight. */
  const held: (() => void)[] = [];
  let dedupKeys = 0;

  const call = (r: Req): Promise<Answer> => {
    const headers: Record<string, string> = { ...r.headers };
    if (r.key !== null) headers.authorization = `Bearer ${r.key ?? keys.all}`;
    if (r.body !== undefined && r.sign !== false && /\/(run|enqueue)$/.test(r.path))
      headers['x-svc-signature'] = sign(SECRET, r.body);
    return requestWithHeaders(`${server.url}${r.path}`, { method: r.method ?? 'GET', headers, body: r.body });
  };
  const post = (path: string, body: string, more: Omit<Req, 'path' | 'body' | 'method'> = {}) =>
    call({ ...more, method: 'POST', path, body, headers: { 'content-type': 'application/json', ...more.headers } });
  const soap11 = (
    flowName: string,
    headers: Record<string, string> = {},
    body = env11('<Check xmlns="urn:test:check"/>'),
  ) =>
    call({
      method: 'POST',
      path: `/flows/acme/${flowName}/run`,
      body,
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: 'Check', ...headers },
    });
  const soap12 = (flowName: string, headers: Record<string, string> = {}) =>
    call({
      method: 'POST',
      path: `/flows/acme/${flowName}/run`,
      body: env12('<Check xmlns="urn:test:check"/>'),
      headers: { 'content-type': 'application/soap+xml; charset=utf-8', ...headers },
    });

  const releaseHeld = () => {
    for (const release of held.splice(0)) release();
  };
  const waitForHeld = (n: number) => waitFor(`${n} calls held at the backend`, () => held.length >= n);

  /** Runs `probe` while every execution slot is taken by a /run held at the backend. */
  async function withSlotsTaken(probe: () => Promise<Answer>): Promise<Answer> {
    const holders = Array.from({ length: SLOTS }, () => post('/flows/acme/slow/run', '{}'));
    try {
      await waitForHeld(SLOTS);
      return await probe();
    } finally {
      releaseHeld();
      await Promise.all(holders);
    }
  }

  /** Runs `probe(key)` while a delivery of the dedup key `key` is in flight. */
  async function withDeliveryInFlight(probe: (key: string) => Promise<Answer>): Promise<Answer> {
    const key = `k${++dedupKeys}`;
    const first = post('/flows/acme/held/run', '{}', { headers: { 'x-key': key } });
    try {
      await waitForHeld(1);
      return await probe(key);
    } finally {
      releaseHeld();
      await first;
    }
  }

  /** A table of the store cannot be read while `probe` runs (test/gate-refusals.test.ts does the same). */
  async function withTableAway(table: string, probe: () => Promise<Answer>): Promise<Answer> {
    withRegistry(sandbox, (db) => db.exec(`ALTER TABLE ${table} RENAME TO ${table}_away`));
    try {
      return await probe();
    } finally {
      withRegistry(sandbox, (db) => db.exec(`ALTER TABLE ${table}_away RENAME TO ${table}`));
    }
  }
  /** The gate's status, from a request with the unrestricted key. */
  const gateAnswers = async () => (await call({ path: '/flows/acme/echo' })).status;

  /**
   * The gate's storage fails while `probe` runs. On SQLite the gate reads the key table per request:
   * it is renamed away. On --store the gate reads the node's copy of the registry, which refuses once
   * it was not confirmed for 1 s: the change log it follows is renamed away until the gate says so.
   */
  async function withGateStorageFailing(probe: () => Promise<Answer>): Promise<Answer> {
    if (!ON_PG_STORE) return withTableAway('api_keys', probe);
    const answer = await withTableAway('registry_changes', async () => {
      await waitFor(
        "the node's registry copy stale (the gate answers 503)",
        async () => (await gateAnswers()) === 503,
        10_000,
        200,
      );
      return probe();
    });
    // The next case needs the copy confirmed again.
    await waitFor(
      "the node's registry copy confirmed again (the gate answers 200)",
      async () => (await gateAnswers()) === 200,
      10_000,
      100,
    );
    return answer;
  }

  /** Repeats `r` with the rate-limited key (1 request per second) until it is refused. */
  async function untilRateLimited(r: () => Promise<Answer>): Promise<Answer> {
    for (let i = 0; i < 20; i++) {
      const answer = await r();
      if (answer.status === 429) return answer;
    }
    throw new Error('no 429 after 20 requests with a key limited to 1 per second');
  }

  const rawHead = (route: string, length: number) =>
    `POST /flows/acme/echo/${route} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${keys.all}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
  /** The body starts and never finishes: request_body_timeout_secs (1 s here) runs out. */
  const slowBody = async (route: string) =>
    answerFromRaw(await rawRequest(server.port, `${rawHead(route, 100)}{"a":`, { untilClose: true, waitMs: 10_000 }));
  /** A declared Content-Length above the 1 MiB ceiling; no body byte is sent. */
  const oversized = async (route: string) =>
    answerFromRaw(await rawRequest(server.port, rawHead(route, 5_000_000), { untilClose: true, waitMs: 10_000 }));

  const blockedQueue = () => join(dirname(sandbox.db), 'queues', 'acme', 'blocked');
  const header = (a: Answer, name: string) => a.headers[name];

  const PROBES: Probe[] = [
    // POST /run
    {
      op: `POST ${RUN}`,
      status: '200',
      what: 'a JSON output as application/json',
      send: () => post('/flows/acme/echo/run', '{"a":1}'),
    },
    {
      op: `POST ${RUN}`,
      status: '200',
      what: 'a string output as text/plain',
      send: () => post('/flows/acme/text/run', '{"name":"Ada"}'),
    },
    {
      op: `POST ${RUN}`,
      status: '200',
      what: 'an XML output as application/xml',
      send: () => post('/flows/acme/xml-out/run', '{"name":"Ada"}'),
    },
    { op: `POST ${RUN}`, status: '200', what: 'a SOAP 1.1 request gets a 1.1 envelope', send: () => soap11('soapy') },
    { op: `POST ${RUN}`, status: '200', what: 'a SOAP 1.2 request gets a 1.2 envelope', send: () => soap12('soapy') },
    {
      op: `POST ${RUN}`,
      status: '200',
      what: 'a duplicate of a completed dedup_key is replayed with the replay headers',
      send: async () => {
        await post('/flows/acme/memo/run', '{"id":"m1"}');
        return post('/flows/acme/memo/run', '{"id":"m1"}');
      },
      also: (a) => {
        assert.equal(header(a, 'x-svc-idempotent-replay'), 'true');
        assert.ok(header(a, 'x-svc-first-correlation-id'));
      },
    },
    {
      op: `POST ${RUN}`,
      status: 'default',
      what: "the flow's response_status (201)",
      send: () => post('/flows/acme/shaped/run', '{}'),
      also: (a) => assert.equal(a.status, 201),
    },
    {
      op: `POST ${RUN}`,
      status: '400',
      what: 'a path component breaking the name rule',
      send: () => post('/flows/ACME/echo/run', '{}'),
    },
    { op: `POST ${RUN}`, status: '400', what: 'malformed JSON', send: () => post('/flows/acme/echo/run', '{"a":') },
    {
      op: `POST ${RUN}`,
      status: '400',
      what: 'a false syntactic rule answers {"error","step"}',
      send: () => post('/flows/acme/rules/run', '{"amount":1}'),
    },
    {
      op: `POST ${RUN}`,
      status: '400',
      what: 'a malformed SOAP 1.1 envelope is a 400 Fault',
      send: () => soap11('soapy', {}, '<NotAnEnvelope/>'),
    },
    {
      op: `POST ${RUN}`,
      status: '400',
      what: 'a false syntactic rule on SOAP 1.2 is a 400 Fault',
      send: () => soap12('soapy', { 'x-mode': 'syn' }),
    },
    {
      op: `POST ${RUN}`,
      status: '401',
      what: 'no key',
      send: () => post('/flows/acme/echo/run', '{}', { key: null }),
      also: (a) => assert.equal(header(a, 'www-authenticate'), 'Bearer'),
    },
    {
      op: `POST ${RUN}`,
      status: '401',
      what: 'no signature under --secret',
      send: () => post('/flows/acme/echo/run', '{}', { sign: false }),
    },
    {
      op: `POST ${RUN}`,
      status: '403',
      what: 'a key without the required scope',
      send: () => post('/flows/acme/secure/run', '{}', { key: keys.reader }),
    },
    {
      op: `POST ${RUN}`,
      status: '403',
      what: "a flow outside the key's allowlist",
      send: () => post('/flows/acme/secure/run', '{}', { key: keys.echoOnly }),
    },
    {
      op: `POST ${RUN}`,
      status: '404',
      what: 'no flow under the name',
      send: () => post('/flows/acme/nope/run', '{}'),
    },
    { op: `POST ${RUN}`, status: '408', what: 'a body too slow', send: () => slowBody('run') },
    {
      op: `POST ${RUN}`,
      status: '409',
      what: 'a duplicate while the first delivery of its dedup_key is in flight',
      send: () => withDeliveryInFlight((key) => post('/flows/acme/held/run', '{}', { headers: { 'x-key': key } })),
      also: (a) => assert.ok(header(a, 'x-svc-first-correlation-id')),
    },
    {
      op: `POST ${RUN}`,
      status: '409',
      what: 'the same duplicate over SOAP 1.2 is a 409 Fault',
      send: () => withDeliveryInFlight((key) => soap12('held', { 'x-key': key })),
    },
    { op: `POST ${RUN}`, status: '413', what: 'a declared body above the ceiling', send: () => oversized('run') },
    {
      op: `POST ${RUN}`,
      status: '422',
      what: 'a false semantic rule answers {"error","step"}',
      send: () => post('/flows/acme/rules/run', '{"id":1,"amount":0}'),
    },
    {
      op: `POST ${RUN}`,
      status: '422',
      what: 'a false semantic rule on SOAP 1.2 is a 422 Fault',
      send: () => soap12('soapy', { 'x-mode': 'sem' }),
    },
    {
      op: `POST ${RUN}`,
      status: '429',
      what: 'a key over its rate limit',
      send: () => untilRateLimited(() => post('/flows/acme/echo/run', '{}', { key: keys.limited })),
    },
    {
      op: `POST ${RUN}`,
      status: '500',
      what: 'a defect in the flow',
      send: () => post('/flows/acme/defect/run', '{}'),
    },
    {
      op: `POST ${RUN}`,
      status: '500',
      what: 'any SOAP 1.1 Fault (a false semantic rule)',
      send: () => soap11('soapy', { 'x-mode': 'sem' }),
    },
    {
      op: `POST ${RUN}`,
      status: '500',
      what: 'a defect on SOAP 1.2',
      send: () => soap12('soapy', { 'x-mode': 'defect' }),
    },
    {
      op: `POST ${RUN}`,
      status: '502',
      what: 'a call out that fails',
      send: () => post('/flows/acme/egress-fail/run', '{}'),
    },
    { op: `POST ${RUN}`, status: '502', what: 'a call out that fails, on SOAP 1.2', send: () => soap12('soap-call') },
    {
      op: `POST ${RUN}`,
      status: '503',
      what: "the gate's storage failing",
      send: () => withGateStorageFailing(() => post('/flows/acme/echo/run', '{}')),
    },
    // The answer carries the fixed text only (the schema's enum), never what SQLite said.
    {
      op: `POST ${RUN}`,
      status: '503',
      what: 'the registry unreadable as the execution starts',
      send: () => withTableAway('trace_config', () => post('/flows/acme/echo/run', '{}')),
      skip: onlyOn(
        'sqlite',
        "on --store an execution reads the registry (trace flags, the flow) from the node's copy in memory: its one failure, the stale copy, is the gate's 503 above",
      ),
    },
    {
      op: `POST ${RUN}`,
      status: '503',
      what: 'every execution slot taken (server busy)',
      send: () => withSlotsTaken(() => post('/flows/acme/echo/run', '{}')),
      also: (a) => assert.match(String(header(a, 'retry-after')), /^[1-9]\d*$/),
    },
    {
      op: `POST ${RUN}`,
      status: '503',
      what: 'server busy on SOAP 1.2 is a 503 Fault',
      send: () => withSlotsTaken(() => soap12('soapy')),
    },
    // POST /enqueue
    {
      op: `POST ${ENQUEUE}`,
      status: '202',
      what: 'a message written',
      send: () => post('/flows/acme/echo/enqueue', '{"a":1}'),
    },
    {
      op: `POST ${ENQUEUE}`,
      status: '400',
      what: 'malformed JSON',
      send: () => post('/flows/acme/echo/enqueue', '{"a":'),
    },
    {
      op: `POST ${ENQUEUE}`,
      status: '401',
      what: 'no key',
      send: () => post('/flows/acme/echo/enqueue', '{}', { key: null }),
    },
    {
      op: `POST ${ENQUEUE}`,
      status: '401',
      what: 'no signature under --secret',
      send: () => post('/flows/acme/echo/enqueue', '{}', { sign: false }),
    },
    {
      op: `POST ${ENQUEUE}`,
      status: '403',
      what: 'a key without the required scope',
      send: () => post('/flows/acme/secure/enqueue', '{}', { key: keys.reader }),
    },
    {
      op: `POST ${ENQUEUE}`,
      status: '404',
      what: 'a disabled tenant',
      send: () => post('/flows/gone/echo/enqueue', '{}', { key: keys.gone }),
    },
    { op: `POST ${ENQUEUE}`, status: '408', what: 'a body too slow', send: () => slowBody('enqueue') },
    {
      op: `POST ${ENQUEUE}`,
      status: '413',
      what: 'a declared body above the ceiling',
      send: () => oversized('enqueue'),
    },
    {
      op: `POST ${ENQUEUE}`,
      status: '429',
      what: 'a key over its rate limit',
      send: () => untilRateLimited(() => post('/flows/acme/echo/enqueue', '{}', { key: keys.limited })),
    },
    {
      op: `POST ${ENQUEUE}`,
      status: '500',
      what: 'a queue that cannot be written (a file where its directory goes)',
      skip: onlyOn(
        'sqlite',
        'the queue directories of the state directory; on --store the queues are tables (the next case)',
      ),
      send: async () => {
        mkdirSync(dirname(blockedQueue()), { recursive: true });
        writeFileSync(blockedQueue(), 'not a queue directory');
        try {
          return await post('/flows/acme/blocked/enqueue', '{}');
        } finally {
          rmSync(blockedQueue(), { force: true });
        }
      },
    },
    {
      op: `POST ${ENQUEUE}`,
      status: '500',
      what: 'a queue that cannot be written (the store refuses its rows)',
      skip: onlyOn('postgres', 'the queues are tables of the store (the case above for the state directory)'),
      send: async () => {
        withRegistry(sandbox, (db) =>
          db.exec("ALTER TABLE queue_messages ADD CONSTRAINT openapi_blocked CHECK (flow <> 'blocked') NOT VALID"),
        );
        try {
          return await post('/flows/acme/blocked/enqueue', '{}');
        } finally {
          withRegistry(sandbox, (db) => db.exec('ALTER TABLE queue_messages DROP CONSTRAINT openapi_blocked'));
        }
      },
    },
    {
      op: `POST ${ENQUEUE}`,
      status: '507',
      what: 'a tenant past max_queues_per_tenant (tenant full, one new queue per submission)',
      send: async () => {
        let last: Awaited<ReturnType<typeof post>> | undefined;
        for (let i = 0; i <= QUEUE_BOUND; i++) last = await post(`/flows/full/q${i}/enqueue`, '{}', { key: keys.full });
        return last!;
      },
    },
    {
      op: `POST ${ENQUEUE}`,
      status: '503',
      what: "the gate's storage failing",
      send: () => withGateStorageFailing(() => post('/flows/acme/echo/enqueue', '{}')),
    },
    // GET (and HEAD) /flows/{tenant}/{name}
    {
      op: `GET ${METADATA}`,
      status: '200',
      what: 'the latest artifact',
      send: (method) => call({ method, path: '/flows/acme/echo' }),
    },
    {
      op: `GET ${METADATA}`,
      status: '400',
      what: 'a path component breaking the name rule',
      send: (method) => call({ method, path: '/flows/acme/Echo' }),
    },
    {
      op: `GET ${METADATA}`,
      status: '401',
      what: 'no key',
      send: (method) => call({ method, path: '/flows/acme/echo', key: null }),
    },
    {
      op: `GET ${METADATA}`,
      status: '403',
      what: 'a key without the required scope',
      send: (method) => call({ method, path: '/flows/acme/secure', key: keys.reader }),
    },
    {
      op: `GET ${METADATA}`,
      status: '404',
      what: 'no flow under the name',
      send: (method) => call({ method, path: '/flows/acme/nope' }),
    },
    {
      op: `GET ${METADATA}`,
      status: '500',
      what: 'an artifact failing its integrity check',
      send: (method) => call({ method, path: '/flows/acme/corrupt' }),
    },
    {
      op: `GET ${METADATA}`,
      status: '503',
      what: "the gate's storage failing",
      send: (method) => withGateStorageFailing(() => call({ method, path: '/flows/acme/echo' })),
    },
    // GET (and HEAD) /flows/{tenant}/{name}/wsdl
    {
      op: `GET ${WSDL}`,
      status: '200',
      what: 'the WSDL of a SOAP flow',
      send: (method) => call({ method, path: '/flows/acme/soapy/wsdl', key: null }),
    },
    {
      op: `GET ${WSDL}`,
      status: '400',
      what: 'a path component breaking the name rule',
      send: (method) => call({ method, path: '/flows/acme/so%20apy/wsdl', key: null }),
    },
    {
      op: `GET ${WSDL}`,
      status: '404',
      what: 'a flow without SOAP keys',
      send: (method) => call({ method, path: '/flows/acme/echo/wsdl', key: null }),
    },
    {
      op: `GET ${WSDL}`,
      status: '500',
      what: 'an artifact failing its integrity check',
      send: (method) => call({ method, path: '/flows/acme/soap-corrupt/wsdl', key: null }),
    },
    // POST /connector/events/{tenant}/{flow}
    {
      op: `POST ${CONNECTOR}`,
      status: '202',
      what: 'an event recorded',
      send: () => post('/connector/events/acme/echo', '{"event_type":"connector_received","message_id":"m-1"}'),
    },
    {
      op: `POST ${CONNECTOR}`,
      status: '400',
      what: 'another event_type',
      send: () => post('/connector/events/acme/echo', '{"event_type":"other"}'),
    },
    {
      op: `POST ${CONNECTOR}`,
      status: '401',
      what: 'no key',
      send: () => post('/connector/events/acme/echo', '{"event_type":"connector_received"}', { key: null }),
    },
    {
      op: `POST ${CONNECTOR}`,
      status: '403',
      what: 'a key without the required scope',
      send: () => post('/connector/events/acme/secure', '{"event_type":"connector_received"}', { key: keys.reader }),
    },
    {
      op: `POST ${CONNECTOR}`,
      status: '404',
      what: 'a disabled tenant',
      send: () => post('/connector/events/gone/echo', '{"event_type":"connector_received"}', { key: keys.gone }),
    },
    {
      op: `POST ${CONNECTOR}`,
      status: '503',
      what: "the gate's storage failing",
      send: () =>
        withGateStorageFailing(() => post('/connector/events/acme/echo', '{"event_type":"connector_received"}')),
    },
    // The service's own routes
    {
      op: `GET ${HEALTH}`,
      status: '200',
      what: 'alive',
      send: (method) => call({ method, path: '/health', key: null }),
    },
    {
      op: `GET ${OPENAPI}`,
      status: '200',
      what: 'the document',
      send: (method) => call({ method, path: '/openapi.json', key: null }),
    },
    {
      op: `GET ${OPENAPI}`,
      status: '304',
      what: 'If-None-Match naming the current ETag',
      send: async (method) => {
        const first = await call({ path: '/openapi.json', key: null });
        return call({
          method,
          path: '/openapi.json',
          key: null,
          headers: { 'if-none-match': String(first.headers.etag) },
        });
      },
    },
  ];

  before(async () => {
    backend = createServer((req, res) => {
      req.resume();
      held.push(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"slow":true}'));
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    createTenant(sandbox, 'acme');
    createTenant(sandbox, 'gone');
    keys.all = createKey(sandbox, 'acme');
    keys.reader = createKey(sandbox, 'acme', { scopes: 'orders:read' });
    keys.echoOnly = createKey(sandbox, 'acme', { flows: 'echo' });
    keys.limited = createKey(sandbox, 'acme', { rateLimit: 1 });
    keys.gone = createKey(sandbox, 'gone');
    createTenant(sandbox, 'full');
    keys.full = createKey(sandbox, 'full');
    setTenantEnabled(sandbox, 'gone', false);
    await deployAll(sandbox, [
      'echo',
      'secure',
      'text',
      'xml-out',
      'shaped',
      'rules',
      'defect',
      'egress-fail',
      'slow',
      'corrupt',
    ]);
    for (const text of FLOWS) deployFlow(sandbox, text);
    setSystemConfig(sandbox, {
      max_concurrent_flow_executions: SLOTS,
      request_body_timeout_secs: 1,
      max_queues_per_tenant: QUEUE_BOUND,
    });
    // Broken before the server reads them: verified artifacts are cached by hash.
    corruptArtifact(sandbox, 'acme', 'corrupt');
    corruptArtifact(sandbox, 'acme', 'soap-corrupt');
    const port = (backend.address() as AddressInfo).port;
    server = await startServer(sandbox, ['--secret', SECRET], { SLOW_URL: `http://127.0.0.1:${port}` });
    const res = await call({ path: '/openapi.json', key: null });
    doc = JSON.parse(res.body) as Record<string, unknown>;
    checker = new ConformanceChecker(doc);
  });
  after(async () => {
    releaseHeld();
    await server?.stop();
    backend?.closeAllConnections();
    await new Promise((r) => backend?.close(r));
    sandbox.cleanup();
  });

  it('is public, application/json, with an ETag and Cache-Control', async () => {
    const res = await call({ path: '/openapi.json', key: null });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.match(String(res.headers.etag), /^"[0-9a-f]{32}"$/);
    assert.equal(res.headers['cache-control'], 'public, max-age=300');
    const again = await call({
      path: '/openapi.json',
      key: null,
      headers: { 'if-none-match': `"stale", ${String(res.headers.etag)}` },
    });
    assert.equal(again.status, 304);
    assert.equal(again.body, '');
  });

  it('is a structurally sound OpenAPI 3.1 document', () => {
    assert.deepEqual(openApiProblems(doc), []);
  });

  it("describes package.json's version of the service", () => {
    const pkg = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { version: string };
    assert.equal((doc.info as { version: string }).version, pkg.version);
  });

  it('the structural check finds each defect it looks for', () => {
    const cases: [string, (d: Node) => void, RegExp][] = [
      ['a 3.0 version', (d) => (d.openapi = '3.0.3'), /openapi must be 3\.1/],
      [
        'a response without a description',
        (d) => delete at(d, 'paths', HEALTH, 'get', 'responses', '200').description,
        /needs a description/,
      ],
      [
        'a $ref to nothing',
        (d) =>
          (at(d, 'paths', HEALTH, 'get', 'responses', '200', 'content', 'application/json').schema = {
            $ref: '#/components/schemas/Nope',
          }),
        /resolves to nothing/,
      ],
      [
        'a path variable without a parameter',
        (d) => (at(d, 'paths', WSDL, 'get').parameters = []),
        /has no path parameter/,
      ],
      [
        'a status key that is no status',
        (d) => (at(d, 'paths', HEALTH, 'get', 'responses')['2xx'] = { description: 'x' }),
        /not a status code/,
      ],
      [
        'a schema keyword the checker cannot check',
        (d) => (at(d, 'components', 'schemas', 'Health').allOf = []),
        /outside the checked subset/,
      ],
      [
        'an undefined security scheme',
        (d) => (at(d, 'paths', HEALTH, 'get').security = [{ nope: [] }]),
        /is not defined/,
      ],
      [
        'a repeated operationId',
        (d) => (at(d, 'paths', HEALTH, 'get').operationId = at(d, 'paths', RUN, 'post').operationId),
        /not unique/,
      ],
      [
        'a bad media type',
        (d) => (at(d, 'paths', HEALTH, 'get', 'responses', '200').content = { json: { schema: {} } }),
        /not a media type/,
      ],
    ];
    for (const [what, mutate, expected] of cases) {
      const copy = structuredClone(doc);
      mutate(copy);
      const problems = openApiProblems(copy);
      assert.ok(
        problems.some((p) => expected.test(p)),
        `${what}: ${JSON.stringify(problems)}`,
      );
    }
    const metadata = deref<Schema>(doc, { $ref: '#/components/schemas/FlowMetadata' });
    const resolveRef = (ref: string) => deref<Schema>(doc, { $ref: ref });
    assert.notDeepEqual(
      valueProblems(
        metadata,
        { tenant: 'acme', name: 'echo', version: '1', hash: 'nothex', created_at: 'x', extra: 1 },
        resolveRef,
      ),
      [],
    );
  });

  describe('every documented status, provoked', () => {
    for (const probe of PROBES) {
      const [method, path] = probe.op.split(' ') as [string, string];
      for (const m of method === 'GET' ? ['GET', 'HEAD'] : [method]) {
        it(`${m} ${path} ${probe.status}: ${probe.what}`, { skip: probe.skip }, async () => {
          const answer = await probe.send(m);
          checker.check(m, path, probe.status, answer);
          probe.also?.(answer);
        });
      }
    }
  });

  it('documents no 429 on metadata and connector events because the rate limit never refuses them', async () => {
    assert.equal((await untilRateLimited(() => post('/flows/acme/echo/run', '{}', { key: keys.limited }))).status, 429);
    assert.equal((await call({ path: '/flows/acme/echo', key: keys.limited })).status, 200);
    assert.equal(
      (await post('/connector/events/acme/echo', '{"event_type":"connector_received"}', { key: keys.limited })).status,
      202,
    );
    for (const op of [checker.operation('GET', METADATA), checker.operation('POST', CONNECTOR)])
      assert.ok(!('429' in (op!.responses as object)));
  });

  it('documents exactly the routes the server answers; every other method on those paths, and near misses, get 404 no route', async () => {
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
      HTTP_METHODS.filter((m) => item[m] !== undefined).map((m) => `${m.toUpperCase()} ${path}`),
    );
    assert.deepEqual([...documented].sort(), [...SERVED].sort());
    const sample = (template: string) =>
      template.replace('{tenant}', 'acme').replace('{name}', 'echo').replace('{flow}', 'echo');
    const nearMisses = [
      '/',
      '/flows',
      '/flows/acme',
      '/flows/acme/echo/run/more',
      '/flows/acme/echo/other',
      '/connector/events/acme',
      '/openapi',
      '/openapi.yaml',
      '/healthz',
    ];
    const paths = [...Object.keys(doc.paths as object).map(sample), ...nearMisses];
    for (const path of paths) {
      for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
        const template = Object.keys(doc.paths as object).find((t) => sample(t) === path);
        if (template !== undefined && SERVED.includes(`${method} ${template}`)) continue;
        const res = await call({ method, path, body: method === 'POST' ? '{}' : undefined });
        assert.equal(res.status, 404, `${method} ${path}: ${res.body}`);
        if (method !== 'HEAD')
          assert.deepEqual(JSON.parse(res.body), { ok: false, error: `no route for ${method} ${path}` });
      }
    }
  });

  it('leaves the management UI out on purpose, and says so: /ui/ serves HTML pages, and no documented path is under /ui', async () => {
    const login = await call({ path: '/ui/login', key: null });
    assert.equal(login.status, 200);
    assert.match(String(login.headers['content-type']), /^text\/html/);
    assert.deepEqual(
      Object.keys(doc.paths as object).filter((p) => p.startsWith('/ui')),
      [],
    );
    assert.match((doc.info as { description: string }).description, /management UI under `\/ui\/`/);
  });

  it('while the server closes, every route answers 503 server is shutting down and closes the connection', async () => {
    const body = '{"event_type":"connector_received"}';
    const signed = (path: string, payload: string) =>
      `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${keys.all}\r\nContent-Type: application/json\r\nX-Svc-Signature: ${sign(SECRET, payload)}\r\nContent-Length: ${payload.length}\r\n\r\n${payload}`;
    const get = (method: string, path: string, auth: boolean) =>
      `${method} ${path} HTTP/1.1\r\nHost: x\r\n${auth ? `Authorization: Bearer ${keys.all}\r\n` : ''}\r\n`;
    const requests: [string, string, string][] = [
      ['POST', RUN, signed('/flows/acme/echo/run', '{}')],
      ['POST', ENQUEUE, signed('/flows/acme/echo/enqueue', '{}')],
      ['POST', CONNECTOR, signed('/connector/events/acme/echo', body)],
      ...['GET', 'HEAD'].flatMap((m): [string, string, string][] => [
        [m, METADATA, get(m, '/flows/acme/echo', true)],
        [m, WSDL, get(m, '/flows/acme/soapy/wsdl', false)],
        [m, HEALTH, get(m, '/health', false)],
        [m, OPENAPI, get(m, '/openapi.json', false)],
      ]),
    ];
    assert.ok(requests.length <= SLOTS);
    // Each connection first carries a /run held at the backend, so it stays open while the server closes.
    const sockets = requests.map(() => connect(server.port, '127.0.0.1'));
    await Promise.all(sockets.map((s) => new Promise((r) => s.once('connect', r))));
    const texts = sockets.map(collect);
    for (const s of sockets) s.write(signed('/flows/acme/slow/run', '{}'));
    await waitForHeld(requests.length);
    server.child.kill('SIGTERM');
    // The listener closes after the server has started refusing: from then on every request is answered 503.
    await waitFor('the listener to close', async () => !(await accepts(server.port)));
    requests.forEach(([, , request], i) => sockets[i]!.write(request));
    releaseHeld();
    const answers = await Promise.all(texts);
    requests.forEach(([method, path], i) => {
      const parts = answers[i]!.split(/(?=HTTP\/1\.1 \d{3} )/);
      assert.equal(parts.length, 2, answers[i]);
      assert.match(parts[0]!, /^HTTP\/1\.1 200 /);
      const split = parts[1]!.indexOf('\r\n\r\n');
      const answer = answerFromRaw({
        status: Number(parts[1]!.slice(9, 12)),
        head: parts[1]!.slice(0, split),
        body: parts[1]!.slice(split + 4),
        raw: parts[1]!,
        closed: true,
      });
      checker.check(method, path, '503', answer);
      assert.equal(answer.headers.connection, 'close', `${method} ${path}`);
      if (method !== 'HEAD')
        assert.equal((JSON.parse(answer.body) as { error: string }).error, 'server is shutting down');
    });
  });

  it('has a probe above, or a stated reason, for every documented operation, status and response media type', () => {
    assert.deepEqual(checker.unprovoked(new Set(NOT_PROVOKED.keys()), false), [], 'statuses never provoked');
    assert.deepEqual(
      checker.unprovoked(new Set([...NOT_PROVOKED.keys(), ...MEDIA_NOT_PROVOKED.keys()]), true),
      [],
      'media types never provoked',
    );
    const provokedAnyway = [...NOT_PROVOKED.keys()].filter((k) => checker.seen.has(k));
    assert.deepEqual(provokedAnyway, [], 'listed as not provoked, yet provoked');
  });
});

type Node = Record<string, unknown>;

/** The object at `path` inside `node` (for mutating a copy of the document). */
function at(node: Node, ...path: string[]): Node {
  return path.reduce<Node>((n, key) => n[key] as Node, node);
}

/** Everything the server writes on a socket until it closes it. */
function collect(socket: Socket): Promise<string> {
  let text = '';
  socket.setEncoding('utf8').on('data', (d: string) => (text += d));
  return new Promise((resolvePromise) => socket.once('close', () => resolvePromise(text)));
}

/** True while something accepts connections on the port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolvePromise(true);
    });
    s.once('error', () => resolvePromise(false));
  });
}
