/**
 * Black-box: three `svc serve --store` nodes on one PostgreSQL schema, each with its own empty
 * state directory (issue 23). Work spreads over the nodes, every acknowledged message reaches the
 * stub, each cron tick runs once, the audit chain verifies; `kill -9` of the node holding the
 * scheduler and of one holding a queue, and the others take over. A fourth node reaches the
 * database through a TCP proxy that the test cuts: 503, never a pass, then it recovers by itself.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { dirname } from 'node:path';
import { after, before, test } from 'node:test';
import { advisoryLockKey } from '../src/queue/coordination/node-lease.js';
import { queueLockName } from '../src/queue/pg/pg-queue-consumer.js';
import { openStore, type PgStores } from '../src/storage/index.js';
import { adminQuery, freshPgSchema, PG_TEST_URL, type PgSchema } from './helpers/pg.js';
import { createKey, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type Sandbox, type ServerProcess } from './helpers/svc.js';
import { TcpProxy } from './helpers/tcp-proxy.js';
import { sleep, waitFor } from './helpers/wait.js';

const QUEUES = ['deliver1', 'deliver2', 'deliver3'];
let schema: PgSchema;
let stub: Server;
let stubUrl: string;
let seed: Sandbox;
let key: string;
let store: PgStores;
const sandboxes: Sandbox[] = [];
const nodes: ServerProcess[] = [];
/** What the stub received: queue message ids by queue, and the arrival time of each cron tick. */
const received = new Map<string, string[]>();
const ticks: number[] = [];

const ENV = { SVC_TEST_SCHEDULER_POLL_MS: '200', SVC_TEST_SCHEDULER_LEASE_MS: '1500' };

async function node(url = schema.url): Promise<ServerProcess> {
  const sb = makeSandbox({ BACKEND_URL: stubUrl });
  sandboxes.push(sb);
  const n = await startServer(sb, ['--store', url], ENV);
  nodes.push(n);
  return n;
}

async function post(n: ServerProcess, path: string, body: unknown): Promise<Response> {
  return fetch(`${n.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/**
 * The pid of the node whose lease holds the worker lock of queue acme/<flow>, from the lease
 * session's name `svc-lease host:pid`.
 */
async function queueHolderPid(flowName: string): Promise<number | undefined> {
  const k = advisoryLockKey(schema.name, queueLockName('acme', flowName));
  const r = await adminQuery<{ app: string }>(
    `SELECT a.application_name AS app FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 1`,
    [k.classid, k.objid],
  );
  const app = r.rows[0]?.app;
  return app === undefined ? undefined : Number(/:(\d+)$/.exec(app)?.[1]);
}

before(async () => {
  schema = await freshPgSchema();
  stub = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const [, kind, name] = (req.url ?? '').split('/');
      if (kind === 'tick') ticks.push(Date.now());
      else if (kind === 'msg') {
        const list = received.get(name!) ?? [];
        list.push((JSON.parse(body) as { id: string }).id);
        received.set(name!, list);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => stub.listen(0, '127.0.0.1', () => r()));
  stubUrl = `http://127.0.0.1:${(stub.address() as { port: number }).port}`;

  // The installation is made on a state directory with the CLI, then moved to the store.
  seed = makeSandbox();
  createTenant(seed, 'acme');
  key = createKey(seed, 'acme');
  // The message (the input, {"id": ...}) is the request body.
  const egress = (path: string) =>
    `## Step: call\neffects: [http_egress]\nendpoint: \${BACKEND_URL}${path}\nmethod: POST`;
  for (const q of QUEUES) deployFlow(seed, flow('acme', q, 'effects: [http_egress]', egress(`/msg/${q}`)));
  deployFlow(
    seed,
    flow(
      'acme',
      'tick',
      'schedule: "*/1 * * * * *"\neffects: [http_egress]',
      '## Step: call\neffects: [http_egress]\nendpoint: ${BACKEND_URL}/tick/x\nmethod: POST',
    ),
  );
  const moved = svc(seed, ['store', 'migrate', '--from', dirname(seed.db), '--to', schema.url]);
  assert.equal(moved.code, 0, moved.stderr);
  store = (await openStore(schema.url, { pg: { maxConnections: 2 } })) as PgStores;
  for (let i = 0; i < 3; i++) await node();
});

after(async () => {
  for (const n of nodes) await n.kill9();
  await store?.close();
  stub?.close();
  for (const sb of [seed, ...sandboxes]) sb?.cleanup();
  await schema?.drop();
});

test('three nodes: /run on every node, work spread over them, every acknowledged message delivered', async () => {
  for (const n of nodes) {
    const r = await post(n, '/flows/acme/deliver1/run', { id: 'direct' });
    assert.equal(r.status, 200, await r.text());
  }
  const acked = new Map<string, string[]>(QUEUES.map((q) => [q, []]));
  // Each queue gets its first message from a different node, so each node starts one worker.
  for (let i = 0; i < 3; i++) {
    const r = await post(nodes[i]!, `/flows/acme/${QUEUES[i]}/enqueue`, { id: `${QUEUES[i]}-first` });
    assert.equal(r.status, 202);
    acked.get(QUEUES[i]!)!.push(`${QUEUES[i]}-first`);
  }
  const sends: Promise<void>[] = [];
  for (let i = 0; i < 150; i++) {
    const q = QUEUES[i % 3]!;
    const id = `${q}-${i}`;
    sends.push(
      post(nodes[(i * 7) % 3]!, `/flows/acme/${q}/enqueue`, { id }).then(
        (r) => void (r.status === 202 && acked.get(q)!.push(id)),
      ),
    );
  }
  await Promise.all(sends);
  for (const q of QUEUES)
    await waitFor(
      `every acknowledged message of ${q} delivered`,
      () => acked.get(q)!.every((id) => received.get(q)?.includes(id)),
      30_000,
      100,
    );
  // One worker per queue across the cluster, spread over the nodes that first took each queue.
  const holders = await adminQuery<{ n: number }>(
    `SELECT count(DISTINCT l.pid)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND a.application_name LIKE 'svc-lease %'`,
  );
  assert.ok(holders.rows[0]!.n >= 2, `queue and duty locks held by ${holders.rows[0]!.n} node(s)`);
  const left = await adminQuery<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema.name}.queue_messages`);
  assert.equal(left.rows[0]!.n, 0);
});

test('a key created and revoked through the CLI on the store is accepted, then refused, by every node within a second', async () => {
  const made = svc(seed, [
    'keys',
    'create',
    '--tenant',
    'acme',
    '--label',
    'short-lived',
    '--json',
    '--store',
    schema.url,
  ]);
  assert.equal(made.code, 0, made.stderr);
  const { id, key: raw } = JSON.parse(made.stdout) as { id: number; key: string };
  const statusOn = async (n: ServerProcess) =>
    (
      await fetch(`${n.url}/flows/acme/deliver1/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${raw}`, 'content-type': 'application/json' },
        body: '{"id":"k"}',
      })
    ).status;
  const everyNode = async (status: number) => (await Promise.all(nodes.map(statusOn))).every((s) => s === status);
  const created = Date.now();
  await waitFor('the new key accepted by every node', () => everyNode(200), 5000, 20);
  const acceptedMs = Date.now() - created;
  const revoked = svc(seed, ['keys', 'revoke', '--id', String(id), '--store', schema.url]);
  assert.equal(revoked.code, 0, revoked.stderr);
  const revokedAt = Date.now();
  await waitFor('the revoked key refused by every node', () => everyNode(401), 5000, 20);
  const refusedMs = Date.now() - revokedAt;
  assert.ok(
    refusedMs < 1000,
    `refused by every node ${refusedMs} ms after the revoke returned (accepted ${acceptedMs} ms after create)`,
  );
});

test('each cron tick runs once on the cluster, and again after kill -9 of the node running the scheduler', async () => {
  await waitFor('ticks arrive', () => ticks.length >= 2, 15_000, 100);
  const from = ticks.length;
  // On purpose: a window of time, counting the ticks that fall into it.
  await sleep(4000);
  const inWindow = ticks.length - from;
  assert.ok(inWindow >= 3 && inWindow <= 5, `ticks in 4 s with three nodes: ${inWindow}`);
  const runs = await adminQuery<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${schema.name}.schedule_ticks WHERE flow = 'tick'`,
  );
  assert.ok(Math.abs(runs.rows[0]!.n - ticks.length) <= 1, `claimed ticks ${runs.rows[0]!.n}, arrived ${ticks.length}`);

  // The node that claimed the latest tick (host:pid) leads the schedules.
  const leader = await adminQuery<{ node: string }>(
    `SELECT node FROM ${schema.name}.schedule_ticks ORDER BY tick_at DESC LIMIT 1`,
  );
  const pid = Number(/:(\d+)$/.exec(leader.rows[0]!.node)?.[1]);
  const victim = nodes.find((n) => n.child.pid === pid);
  assert.ok(victim, `the scheduler runs on one of the nodes (pid ${pid})`);
  await victim.kill9();
  const killedAt = Date.now();
  await waitFor('ticks resume on another node', () => ticks.some((t) => t > killedAt + 500), 15_000, 100);
  const after0 = ticks.length;
  await sleep(3000);
  const afterWindow = ticks.length - after0;
  assert.ok(afterWindow >= 2 && afterWindow <= 4, `ticks in 3 s after the hand-over: ${afterWindow}`);
});

test('kill -9 of a node holding a queue: another node takes it over and delivers what it had acknowledged', async () => {
  const alive = nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
  const [victim, survivor] = alive as [(typeof alive)[number], (typeof alive)[number]];
  // Messages for every queue go in through the victim first (its workers take the queues, and keep
  // them while they have work or for their idle time); then it dies, and the rest go in through the survivor.
  const acked: string[] = [];
  const send = (n: typeof victim, i: number) => {
    const q = QUEUES[i % 3]!;
    const id = `${q}-k${i}`;
    return post(n, `/flows/acme/${q}/enqueue`, { id }).then((r) => void (r.status === 202 && acked.push(id)));
  };
  await Promise.all(Array.from({ length: 21 }, (_, i) => send(victim, i)));
  const pids = await Promise.all(QUEUES.map((q) => queueHolderPid(q)));
  assert.ok(pids.includes(victim.child.pid!), `the victim runs a queue (holders ${pids.join(', ')})`);
  await victim.kill9();
  await Promise.all(Array.from({ length: 39 }, (_, i) => send(survivor, 21 + i)));
  assert.equal(acked.length, 60, 'every message acknowledged');
  await waitFor(
    'every acknowledged message delivered after the hand-over',
    () => acked.every((id) => QUEUES.some((q) => received.get(q)?.includes(id))),
    30_000,
    100,
  );
});

test('the audit chain stays one chain across the nodes, and verifies', async () => {
  await sleep(500); // the writers flush every 100 ms
  const v = await store.audit.verify('acme');
  assert.equal(v.ok, true, JSON.stringify(v));
  assert.ok(v.count > 200, `entries: ${v.count}`);
});

test('a node that loses the database answers 503 (never a pass) and recovers without a restart', async () => {
  const pgUrl = new URL(PG_TEST_URL);
  const proxy = await TcpProxy.start(pgUrl.hostname, Number(pgUrl.port || 5432));
  try {
    const url = new URL(schema.url);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    const n = await node(url.toString());
    assert.equal((await post(n, '/flows/acme/deliver1/run', { id: 'before' })).status, 200);
    await proxy.cut();
    await sleep(1500); // past the registry copy's staleness bound (1 s)
    const run = await post(n, '/flows/acme/deliver1/run', { id: 'during' });
    assert.equal(run.status, 503);
    assert.match(await run.text(), /authorization temporarily unavailable/);
    const enq = await post(n, '/flows/acme/deliver1/enqueue', { id: 'during' });
    assert.ok(enq.status === 503 || enq.status === 500, `enqueue while the database is away: ${enq.status}`);
    await proxy.restore();
    await waitFor(
      'the node answers again',
      async () => (await post(n, '/flows/acme/deliver1/run', { id: 'after' })).status === 200,
      15_000,
      200,
    );
    const again = await post(n, '/flows/acme/deliver1/enqueue', { id: 'after-enq' });
    assert.equal(again.status, 202);
    await waitFor(
      'the message after recovery delivered',
      () => received.get('deliver1')?.includes('after-enq'),
      15_000,
      100,
    );
  } finally {
    await proxy.close();
  }
});
