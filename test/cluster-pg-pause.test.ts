/**
 * Black-box: a node of a `--store` cluster paused (SIGSTOP) past its lease. The database ends its
 * lease session, another node takes its queue over and delivers what arrives meanwhile; when the
 * paused node resumes (SIGCONT) it finds its lease gone and stops its worker instead of delivering.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { dirname } from 'node:path';
import { after, before, test } from 'node:test';
import { freshPgSchema, type PgSchema } from './helpers/pg.js';
import { createKey, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type Sandbox, type ServerProcess } from './helpers/svc.js';
import { sleep, waitFor } from './helpers/wait.js';

/** A short lease, so the test waits seconds, not the default 10 s. */
const LEASE_MS = 2000;
let schema: PgSchema;
let stub: Server;
let seed: Sandbox;
let key: string;
const sandboxes: Sandbox[] = [];
let a: ServerProcess;
let b: ServerProcess;
const delivered: string[] = [];

async function node(stubUrl: string): Promise<ServerProcess> {
  const sb = makeSandbox({ BACKEND_URL: stubUrl });
  sandboxes.push(sb);
  return startServer(sb, ['--store', schema.url], { SVC_TEST_NODE_LEASE_MS: String(LEASE_MS), RUST_LOG: 'info' });
}

async function enqueue(n: ServerProcess, id: string): Promise<number> {
  const r = await fetch(`${n.url}/flows/acme/work/enqueue`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id }),
  });
  return r.status;
}

before(async () => {
  schema = await freshPgSchema();
  stub = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      delivered.push((JSON.parse(body) as { id: string }).id);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => stub.listen(0, '127.0.0.1', () => r()));
  const stubUrl = `http://127.0.0.1:${(stub.address() as { port: number }).port}`;
  seed = makeSandbox();
  createTenant(seed, 'acme');
  key = createKey(seed, 'acme');
  deployFlow(
    seed,
    flow(
      'acme',
      'work',
      'effects: [http_egress]',
      '## Step: call\neffects: [http_egress]\nendpoint: ${BACKEND_URL}/msg\nmethod: POST',
    ),
  );
  const moved = svc(seed, ['store', 'migrate', '--from', dirname(seed.db), '--to', schema.url]);
  assert.equal(moved.code, 0, moved.stderr);
  a = await node(stubUrl);
  b = await node(stubUrl);
});

after(async () => {
  a?.child.kill('SIGCONT');
  await a?.kill9();
  await b?.kill9();
  stub?.close();
  for (const sb of [seed, ...sandboxes]) sb?.cleanup();
  await schema?.drop();
});

test('a node paused past its lease: another takes its queue over, and the resumed node stands down', async () => {
  // A runs the queue's worker: the first submission reached it.
  assert.equal(await enqueue(a, 'first'), 202);
  await waitFor('the first message delivered by A', () => delivered.includes('first'), 10_000, 50);

  a.child.kill('SIGSTOP');
  const ids = Array.from({ length: 20 }, (_, i) => `while-paused-${i}`);
  for (const id of ids) assert.equal(await enqueue(b, id), 202);
  // The lease (2 s) ends A's session; B's hand-over sweep (every 2 s) starts the worker.
  await waitFor(
    'B delivers what arrived while A was paused',
    () => ids.every((id) => delivered.includes(id)),
    20_000,
    100,
  );

  const before = delivered.length;
  a.child.kill('SIGCONT');
  await waitFor(
    'A reports its lease gone',
    () => /lease session was lost|lock lost/.test(a.output() + a.stderr()),
    10_000,
    100,
  );
  // On purpose: a little time for A to act on anything it still held in memory.
  await sleep(1000);
  // Whatever reaches the stub after A resumed is only new work, delivered by B.
  assert.equal(await enqueue(a, 'after-resume'), 202);
  await waitFor(
    'a message submitted to A after it resumed is delivered',
    () => delivered.includes('after-resume'),
    15_000,
    100,
  );
  const afterResume = delivered.slice(before);
  assert.deepEqual(
    afterResume.filter((id) => id !== 'after-resume'),
    [],
    `delivered again after A resumed: ${afterResume.join(', ')}`,
  );
});
