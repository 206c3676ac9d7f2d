import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EgressError, StepConfigError } from '../../common/errors.js';
import type { HttpEgressIR, StepIR } from '../../ir/types.js';
import { createHttpEgress } from './http-egress.js';

// Certificates come from the openssl CLI; without it these tests are skipped (not passed silently).
const hasOpenssl = spawnSync('openssl', ['version']).status === 0;
const dir = mkdtempSync(join(tmpdir(), 'svc-egress-tls-'));
const f = (name: string) => join(dir, name);
let server: Server;
let base: string;
const egress = createHttpEgress();

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

before(async () => {
  if (!hasOpenssl) return;
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=svc-test-ca');
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '1',
    '-extfile',
    'server.ext',
  );
  openssl('req', ...ec, '-keyout', 'client.key', '-out', 'client.csr', '-subj', '/CN=egress-client');
  openssl(
    'x509',
    '-req',
    '-in',
    'client.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'client.crt',
    '-days',
    '1',
  );
  server = createServer(
    {
      key: readFileSync(f('server.key')),
      cert: readFileSync(f('server.crt')),
      ca: readFileSync(f('ca.crt')),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ client: peer.subject?.CN }));
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  await egress.close();
  if (server !== undefined) {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
  rmSync(dir, { recursive: true, force: true });
});

function step(http: Partial<HttpEgressIR>): StepIR {
  return {
    name: 'mtls',
    line: 1,
    effects: ['http_egress'],
    validate: [],
    responseHeaders: {},
    setCtx: {},
    http: { endpoint: `${base}/x`, method: 'GET', headers: {}, ...http },
  };
}
const render = (t: string) => t;

test(
  'a client certificate and private CA from files on the node pass a server that checks client certificates',
  { skip: !hasOpenssl && 'openssl CLI not found' },
  async () => {
    const r = await egress(
      step({ tlsClientKey: f('client.key'), tlsClientCert: f('client.crt'), tlsCaCert: f('ca.crt') }),
      null,
      {},
      render,
    );
    assert.deepEqual(r.output, { client: 'egress-client' });
  },
);

test(
  'without a client certificate the server refuses and the step fails',
  { skip: !hasOpenssl && 'openssl CLI not found' },
  async () => {
    await assert.rejects(
      egress(step({ tlsCaCert: f('ca.crt') }), null, {}, render),
      (e: unknown) => e instanceof EgressError,
    );
  },
);

test(
  'without the private CA the server certificate is not trusted and the step fails',
  { skip: !hasOpenssl && 'openssl CLI not found' },
  async () => {
    await assert.rejects(
      egress(step({ tlsClientKey: f('client.key'), tlsClientCert: f('client.crt') }), null, {}, render),
      (e: unknown) => e instanceof EgressError,
    );
  },
);

test(
  'an unreadable TLS file fails the step naming the key and path',
  { skip: !hasOpenssl && 'openssl CLI not found' },
  async () => {
    await assert.rejects(
      egress(step({ tlsClientKey: f('absent.key'), tlsClientCert: f('client.crt') }), null, {}, render),
      (e: unknown) =>
        e instanceof StepConfigError && /tls_client_key/.test(e.detail) && e.detail.includes('absent.key'),
    );
  },
);

test('a rotated TLS file gets a fresh pool and the old one is retired', async () => {
  const { AgentPool } = await import('./egress-agents.js');
  let mtime = 1;
  const reads: string[] = [];
  const pool = new AgentPool({ readFile: (p) => (reads.push(p), Buffer.from('x')), mtimeMs: () => mtime });
  const a = await pool.agentFor(1000, { caPath: '/ca.pem' });
  assert.equal(await pool.agentFor(1000, { caPath: '/ca.pem' }), a);
  mtime = 2;
  const b = await pool.agentFor(1000, { caPath: '/ca.pem' });
  assert.notEqual(b, a);
  assert.equal(pool.size, 1);
  assert.deepEqual(reads, ['/ca.pem', '/ca.pem']);
  await pool.close();
});
