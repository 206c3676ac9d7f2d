import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import * as soap from 'soap';
import { StorageUnavailableError } from '../../common/errors.js';
import { xmlToJson } from '../../common/xml.js';
import { wsdlRoutes, type WsdlRouteDeps } from '../http/wsdl-route.js';
import { XmlValue } from '../../common/xml-value.js';
import { readSoapRequest } from './request.js';
import { buildSoapAnswer } from './response.js';
import { buildWsdl, runAddress } from './wsdl.js';

const SOAP_FLOWS: Record<string, { operation: string; namespace: string }> = {
  'acme/pricing': { operation: 'GetPrice', namespace: 'urn:acme:pricing' },
};
let storageDown = false;
const deps: WsdlRouteDeps = {
  tenantActive: (t) => {
    if (storageDown) throw new StorageUnavailableError('registry unreadable');
    return t === 'acme';
  },
  loadSoapConfig: (t, n) => SOAP_FLOWS[`${t}/${n}`],
};

const logged: unknown[][] = [];
let app: FastifyInstance;
before(async () => {
  app = Fastify();
  await app.register(wsdlRoutes(deps, { error: (...args: unknown[]) => logged.push(args) }));
  await app.ready();
});
after(() => app.close());

test('the WSDL is a well-formed document/literal description with one service, port and operation', () => {
  const text = buildWsdl({
    tenant: 'acme',
    flow: 'pricing',
    operation: 'GetPrice',
    namespace: 'urn:acme:pricing',
    scheme: 'http',
    host: 'h:9090',
  });
  const d = xmlToJson(text) as Record<string, Record<string, unknown>>;
  assert.equal(d['@targetNamespace'], 'urn:acme:pricing');
  assert.ok(!Array.isArray(d.service) && !Array.isArray((d.service as Record<string, unknown>).port));
  assert.deepEqual((d.portType as { operation: { '@name': string } }).operation['@name'], 'GetPrice');
  const binding = d.binding as Record<string, Record<string, string>>;
  assert.equal(binding.binding!['@style'], 'document');
  assert.ok(text.includes('xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/"'), 'SOAP 1.1 binding namespace');
  assert.ok(!text.includes('wsdl/soap12/'), 'never a SOAP 1.2 binding');
  assert.equal((text.match(/type="xsd:anyType"/g) ?? []).length, 2);
  assert.ok(text.includes('<soap:address location="http://h:9090/flows/acme/pricing/run"/>'));
  assert.equal(runAddress({ scheme: 'https', host: 'x', tenant: 't', flow: 'f' }), 'https://x/flows/t/f/run');
});

test('GET .../wsdl answers 200 text/xml with the port address from Host and scheme', async () => {
  const res = await app.inject({
    method: 'GET',
    url: '/flows/acme/pricing/wsdl',
    headers: { host: 'api.example:8443', 'x-forwarded-proto': 'https' },
  });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-type'], 'text/xml; charset=utf-8');
  assert.ok(res.body.includes('location="https://api.example:8443/flows/acme/pricing/run"'));
  const plain = await app.inject({ method: 'GET', url: '/flows/acme/pricing/wsdl', headers: { host: 'h' } });
  assert.ok(plain.body.includes('location="http://h/flows/acme/pricing/run"'));
});

test('a path component breaking the name rule gets 400 invalid flow identifier', async () => {
  for (const url of ['/flows/Acme/pricing/wsdl', '/flows/acme/pri%20cing/wsdl', '/flows/-x/pricing/wsdl']) {
    const res = await app.inject({ method: 'GET', url });
    assert.equal(res.statusCode, 400, url);
    assert.deepEqual(res.json(), { ok: false, error: 'invalid flow identifier' });
  }
});

test('an unknown or disabled tenant, a missing flow and a flow without SOAP keys all get the same 404', async () => {
  for (const [t, n] of [
    ['globex', 'pricing'],
    ['acme', 'missing'],
  ]) {
    const res = await app.inject({ method: 'GET', url: `/flows/${t}/${n}/wsdl` });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), { ok: false, error: `flow '${t}/${n}' not found` });
  }
});

test('a storage failure gets 500 internal error, and the operator log gets the cause', async () => {
  storageDown = true;
  logged.length = 0;
  try {
    const res = await app.inject({ method: 'GET', url: '/flows/acme/pricing/wsdl' });
    assert.equal(res.statusCode, 500);
    assert.deepEqual(res.json(), { ok: false, error: 'internal error' });
    assert.equal(logged.length, 1);
    assert.match(String((logged[0]![0] as { err: Error }).err.message), /registry unreadable/);
  } finally {
    storageDown = false;
  }
});

test('the npm soap client builds a client from the served WSDL and lists the operation', async () => {
  const wsdl = buildWsdl({
    tenant: 'acme',
    flow: 'pricing',
    operation: 'GetPrice',
    namespace: 'urn:acme:pricing',
    scheme: 'http',
    host: '127.0.0.1:1',
  });
  const server: Server = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(wsdl),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { port } = server.address() as AddressInfo;
    const client = await soap.createClientAsync(`http://127.0.0.1:${port}/flows/acme/pricing/wsdl`);
    const description = client.describe() as Record<string, Record<string, Record<string, unknown>>>;
    assert.deepEqual(Object.keys(description), ['pricingService']);
    assert.deepEqual(Object.keys(description.pricingService!), ['pricingPort']);
    assert.deepEqual(Object.keys(description.pricingService!.pricingPort!), ['GetPrice']);
    assert.equal(typeof (client as unknown as Record<string, unknown>).GetPriceAsync, 'function');
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('a soap client built from the WSDL can call a server that unwraps with readSoapRequest and answers with buildSoapAnswer', async () => {
  let seen: { action: string | undefined; root: string | undefined; version: string } | undefined;
  let wsdl = '';
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET') return void res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(wsdl);
      const r = readSoapRequest(
        req.headers['content-type'],
        req.headers.soapaction as string | undefined,
        Buffer.concat(chunks),
      )!;
      seen = { action: r.action, root: r.body?.root, version: r.version };
      const answer = buildSoapAnswer(
        r.version,
        new XmlValue(
          '<GetPriceResponse xmlns="urn:acme:pricing"><price>3</price></GetPriceResponse>',
          'GetPriceResponse',
        ),
      );
      res.writeHead(200, { 'content-type': answer.contentType }).end(answer.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    wsdl = buildWsdl({
      tenant: 'acme',
      flow: 'pricing',
      operation: 'GetPrice',
      namespace: 'urn:acme:pricing',
      scheme: 'http',
      host,
    });
    const client = await soap.createClientAsync(`http://${host}/flows/acme/pricing/wsdl`);
    const call = (client as unknown as Record<string, (args: unknown) => Promise<[unknown, string]>>).GetPriceAsync!;
    const [result, rawResponse] = await call.call(client, { item: 'apple' });
    assert.deepEqual(seen, { action: 'GetPrice', root: 'GetPrice', version: '1.1' });
    assert.ok(rawResponse.includes('<price>3</price>'));
    assert.ok(result !== null && typeof result === 'object');
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});
