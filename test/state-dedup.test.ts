/** Black-box: the deduplication row table through real /run requests, plus svc state list / release. */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type Sandbox, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const STATE_KEY = 'test-state-key-0123456789';
let sb: Sandbox;
let server: ServerProcess;
let slow: Server;
/** Releases every held /slow request of the backend. */
let held: (() => void)[] = [];

/** Deploys flow `name` of tenant demo. */
function deploy(name: string, head: string, body: string): void {
  deployFlow(sb, flow('demo', name, head, `# ${name}\n\n${body}`));
}

const ECHO =
  '## Step: echo\nresponse_status: 201\nresponse_header_x_flow: echo\n```ntd\n{"id": "{{ ctx.input.id }}", "at": "{{ uuid() }}"}\n```\n';
const MAYBE_FAIL =
  '## Step: check\n```validate\n!(has(ctx.input.fail) && ctx.input.fail) | asked to fail | semantic\n```\n```ntd\n{"ok": "{{ uuid() }}"}\n```\n';

before(async () => {
  slow = createServer((_req, res) => {
    held.push(() => res.end('{"slow":true}'));
  });
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  sb = makeSandbox();
  createTenant(sb, 'demo');
  deploy('memo', 'dedup_key: ctx.input.id\ndedup_memoize_response: true\n', ECHO);
  deploy('nomemo', 'dedup_key: ctx.input.id\n', ECHO);
  deploy('rerun', 'dedup_key: ctx.input.id\ndedup_memoize_response: true\n', MAYBE_FAIL);
  deploy('absorb', 'dedup_key: ctx.input.id\ndedup_memoize_response: true\ndedup_on_failure: absorb\n', MAYBE_FAIL);
  deploy('short', 'dedup_key: ctx.input.id\ndedup_window_hours: 0.0015\n', ECHO);
  deploy(
    'slow',
    'dedup_key: ctx.input.id\neffects: [http_egress]\n',
    '## Step: call\neffects: [http_egress]\nendpoint: ${SLOW_URL}/slow\nmethod: POST\nread_timeout_ms: 20000\n',
  );
  const port = (slow.address() as AddressInfo).port;
  server = await startServer(sb, ['--no-auth'], {
    SLOW_URL: `http://127.0.0.1:${port}`,
    SVC_SECRET_SVC_STATE_KEY: STATE_KEY,
    SVC_TEST_FLOW_STATE_PURGE_INTERVAL_MS: '300',
  });
});

after(async () => {
  for (const h of held) h();
  await server?.stop();
  await new Promise((r) => slow?.close(r));
  sb?.cleanup();
});

function run(name: string, body: unknown): Promise<Response> {
  return fetch(`${server.url}/flows/demo/${name}/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

test('a done key is replayed with the recorded status, flow headers, memoized body and replay headers', async () => {
  const first = await run('memo', { id: 'a' });
  assert.equal(first.status, 201);
  assert.equal(first.headers.get('x-svc-idempotent-replay'), null);
  const body = await first.text();
  const second = await run('memo', { id: 'a' });
  assert.equal(second.status, 201);
  assert.equal(second.headers.get('x-svc-idempotent-replay'), 'true');
  assert.match(second.headers.get('x-svc-first-correlation-id') ?? '', /^[0-9a-f-]{36}$/);
  assert.equal(second.headers.get('x-flow'), 'echo');
  assert.equal(await second.text(), body);
  const other = await run('memo', { id: 'b' });
  assert.notEqual(await other.text(), body);
});

test('without dedup_memoize_response the replay has the status and headers but no body', async () => {
  const first = await run('nomemo', { id: 'a' });
  assert.equal(first.status, 201);
  await first.text();
  const second = await run('nomemo', { id: 'a' });
  assert.equal(second.status, 201);
  assert.equal(second.headers.get('x-svc-idempotent-replay'), 'true');
  assert.equal(await second.text(), '');
});

test('a failed key runs again as a fresh attempt unless dedup_on_failure is absorb', async () => {
  assert.equal((await run('rerun', { id: 'f', fail: true })).status, 422);
  const again = await run('rerun', { id: 'f', fail: false });
  assert.equal(again.status, 200);
  assert.equal(again.headers.get('x-svc-idempotent-replay'), null);

  assert.equal((await run('absorb', { id: 'f', fail: true })).status, 422);
  const absorbed = await run('absorb', { id: 'f', fail: false });
  assert.equal(absorbed.status, 422);
  assert.equal(absorbed.headers.get('x-svc-idempotent-replay'), 'true');
  assert.match(await absorbed.text(), /asked to fail/);
});

test('an empty dedup key is refused with 422 and runs nothing', async () => {
  const r = await run('memo', { other: 1 });
  assert.equal(r.status, 422);
  assert.match(((await r.json()) as { error: string }).error, /dedup_key/);
});

test('an in_flight key holds duplicates back with 409 until svc state release clears its lease', async () => {
  const first = run('slow', { id: 'k1' });
  await waitFor('the first delivery at the backend', () => held.length > 0, 10_000);
  assert.equal(held.length, 1, 'the first delivery reached the backend');
  const dup = await run('slow', { id: 'k1' });
  assert.equal(dup.status, 409);
  assert.match(((await dup.json()) as { error: string }).error, /still in flight/);

  const listed = svc(sb, ['state', 'list', '--db', sb.db]);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, /Deduplication/);
  assert.match(listed.stdout, /Correlations/);
  const line = listed.stdout.split('\n').find((l) => l.includes(' slow ') && l.includes('in_flight'));
  assert.ok(line, listed.stdout);
  const keyHash = line.trim().split(/\s+/).at(-1)!;
  assert.match(keyHash, /^[0-9a-f]{64}$/);
  assert.doesNotMatch(listed.stdout, /k1/, 'the business key is never printed');

  const refused = svc(sb, [
    'state',
    'release',
    '--tenant',
    'demo',
    '--flow',
    'slow',
    '--key-hash',
    keyHash,
    '--db',
    sb.db,
  ]);
  assert.notEqual(refused.code, 0);
  assert.match(refused.stdout, /in_flight/);
  assert.match(refused.stderr, /--accept-double-execution/);
  assert.equal((await run('slow', { id: 'k1' })).status, 409, 'a refused release changes nothing');

  const noKey = svc(sb, [
    'state',
    'release',
    '--tenant',
    'demo',
    '--flow',
    'slow',
    '--key',
    'k1',
    '--accept-double-execution',
    '--db',
    sb.db,
  ]);
  assert.notEqual(noKey.code, 0);
  assert.match(noKey.stderr, /SVC_SECRET_SVC_STATE_KEY/);

  const released = svc(
    sb,
    [
      'state',
      'release',
      '--tenant',
      'demo',
      '--flow',
      'slow',
      '--key',
      'k1',
      '--accept-double-execution',
      '--db',
      sb.db,
    ],
    {
      env: { SVC_SECRET_SVC_STATE_KEY: STATE_KEY },
    },
  );
  assert.equal(released.code, 0, released.stderr);
  assert.match(released.stdout, new RegExp(`released.*${keyHash}`));

  const second = run('slow', { id: 'k1' });
  await waitFor('the delivery after the release at the backend', () => held.length >= 2, 10_000);
  assert.equal(held.length, 2, 'the delivery after the release ran');
  for (const h of held) h();
  held = [];
  assert.equal((await first).status, 200);
  assert.equal((await second).status, 200);
});

test('a row past its window is purged, and the key then runs fresh', async () => {
  const first = await run('short', { id: 'w' });
  assert.equal(first.status, 201);
  const atFirst = await first.text();
  const listed = svc(sb, ['state', 'list', '--flow', 'short', '--status', 'done', '--db', sb.db]);
  assert.match(listed.stdout, /short\s+done/);
  assert.equal(
    (await run('short', { id: 'w' })).headers.get('x-svc-idempotent-replay'),
    'true',
    'inside the window: replayed',
  );
  await waitFor(
    'the purge of the expired row',
    () => !/short\s+done/.test(svc(sb, ['state', 'list', '--flow', 'short', '--status', 'all', '--db', sb.db]).stdout),
    15_000,
    300,
  );
  const fresh = await run('short', { id: 'w' });
  assert.equal(fresh.headers.get('x-svc-idempotent-replay'), null);
  assert.notEqual(await fresh.text(), atFirst);
});
