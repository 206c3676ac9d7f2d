/** Black-box: the correlation row table through real /run requests (open, conflict, refusal, close, timeout, late close). */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createTenant, deployFlow, flow, insertArtifact } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type Sandbox, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

let sb: Sandbox;
let server: ServerProcess;

/** Deploys flow `name` of tenant demo, answering `{"id": ...}`. */
function deploy(name: string, head: string): void {
  deployFlow(sb, flow('demo', name, head, `# ${name}\n\n## Step: s\n\`\`\`ntd\n{"id": "{{ ctx.input.id }}"}\n\`\`\``));
}

/**
 * Stores `name` as an svc of IR version 1 did: the correlation declaration as written in the front
 * matter (`{open, state}`), not the typed form the compiler now emits.
 */
function legacyFlow(
  name: string,
  correlation: { open: Record<string, unknown>; state?: Record<string, unknown> },
): void {
  const file = join(sb.home, `${name}.flow.md`);
  writeFileSync(
    file,
    `---\nflowdoc_version: "0.1"\nflow: ${name}\ntenant: demo\n---\n\n## Step: s\n\`\`\`ntd\n{"id": "{{ ctx.input.id }}"}\n\`\`\`\n`,
  );
  const r = svc(sb, ['compile', file]);
  assert.equal(r.code, 0, r.stderr);
  const ir = JSON.parse(r.stdout) as Record<string, unknown>;
  assert.equal(ir.irVersion, 2, 'the compiler emits version 2; this helper writes what version 1 stored');
  insertArtifact(sb, 'demo', name, '1', { ...ir, irVersion: 1, correlation });
}

before(async () => {
  sb = makeSandbox();
  createTenant(sb, 'demo');
  deploy(
    'order',
    'correlation_open:\n  key: ctx.input.id\n  deadline_secs: 1\n  on_timeout: order-timeout\n  step: await-reply\ncorrelation_state:\n  card: ctx.input.card\n',
  );
  deploy('reply', 'correlation_open:\n  closes: order\n  key: ctx.input.id\n');
  legacyFlow('old-order', { open: { key: 'ctx.input.id', deadline_secs: 3600 }, state: { card: 'ctx.input.card' } });
  legacyFlow('old-reply', { open: { closes: 'old-order', key: 'ctx.input.id' } });
  legacyFlow('old-broken', { open: { key: 'ctx.input.id', timeout_secs: 5 } });
  server = await startServer(sb, ['--no-auth'], { SVC_TEST_CORRELATION_RECONCILE_INTERVAL_MS: '200' });
});

after(async () => {
  await server?.stop();
  sb?.cleanup();
});

function run(name: string, body: unknown): Promise<Response> {
  return fetch(`${server.url}/flows/demo/${name}/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function errorOf(r: Response): Promise<string> {
  return ((await r.json()) as { ok: boolean; error: string }).error;
}

function rowLine(flowName: string, status: string): string | undefined {
  const out = svc(sb, ['state', 'list', '--status', 'all', '--db', sb.db]).stdout;
  return out.split('\n').find((l) => new RegExp(`^demo\\s+${flowName}\\s+\\S+\\s+${status}\\s`).test(l));
}

test('an open correlation answers 409 for its key; closing it makes it closed and the key is then refused with 422', async () => {
  assert.equal((await run('order', { id: 'o1', card: '4111-secret' })).status, 200);
  const dup = await run('order', { id: 'o1', card: 'x' });
  assert.equal(dup.status, 409);
  assert.match(await errorOf(dup), /already open/);
  assert.equal((await run('reply', { id: 'o1' })).status, 200);
  assert.ok(rowLine('order', 'closed'));
  const reuse = await run('order', { id: 'o1' });
  assert.equal(reuse.status, 422);
  assert.match(await errorOf(reuse), /closed/);
  const twice = await run('reply', { id: 'o1' });
  assert.equal(twice.status, 422);
});

test('an empty correlation key and a close without a row are refused with 422', async () => {
  const empty = await run('order', { id: '' });
  assert.equal(empty.status, 422);
  assert.match(await errorOf(empty), /empty/);
  const none = await run('reply', { id: 'never-opened' });
  assert.equal(none.status, 422);
  assert.match(await errorOf(none), /no correlation/);
});

test('the reconcile pass times out an open row past its deadline; a later close makes it closed_late', async () => {
  assert.equal((await run('order', { id: 'o2', card: '4111-secret' })).status, 200);
  const line = await waitFor('the order row timed out', () => rowLine('order', 'timed_out'), 8000, 200);
  // Row: flow and step, status, opened, deadline, on-timeout flow, correlation id, state present, key hash.
  assert.match(
    line,
    /order\s+await-reply\s+timed_out\s+\S+Z\s+\S+Z\s+order-timeout\s+[0-9a-f-]{36}\s+present\s+[0-9a-f]{64}$/,
  );
  const listed = svc(sb, ['state', 'list', '--db', sb.db]).stdout;
  assert.match(listed, /timed_out/, 'default listing shows open and timed_out');
  assert.doesNotMatch(listed, /4111-secret/, 'correlation_state content is never shown');
  assert.doesNotMatch(listed, /o2/, 'keys only as fingerprints');
  assert.equal((await run('reply', { id: 'o2' })).status, 200);
  assert.ok(rowLine('order', 'closed_late'));
  assert.doesNotMatch(
    svc(sb, ['state', 'list', '--db', sb.db]).stdout,
    /closed_late/,
    'closed rows are not in the default listing',
  );
  assert.match(server.stderr(), /order-timeout/, 'the missing compensating enqueue is reported');
});

test('an artifact stored by an older svc (IR version 1) opens and closes its correlation as before', async () => {
  assert.equal((await run('old-order', { id: 'l1', card: 'c' })).status, 200);
  assert.equal((await run('old-order', { id: 'l1', card: 'c' })).status, 409);
  assert.ok(rowLine('old-order', 'open'));
  assert.equal((await run('old-reply', { id: 'l1' })).status, 200);
  assert.ok(rowLine('old-order', 'closed'));
});

test('an IR-version-1 artifact with a malformed correlation declaration is unreadable: 500 internal error, the problems in the log', async () => {
  const r = await run('old-broken', { id: 'b1' });
  assert.equal(r.status, 500);
  assert.equal(await errorOf(r), 'internal error');
  // The start-up scan logs it (JSON, so the quotes are escaped) and leaves it unserved.
  assert.match(
    server.stderr(),
    /unreadable flow artifact .*demo\/old-broken has a malformed correlation declaration \(correlation_open: unknown key \\"timeout_secs\\"/,
  );
  assert.equal(rowLine('old-broken', 'open'), undefined);
});

test('state list --status refuses an unknown status', () => {
  const r = svc(sb, ['state', 'list', '--status', 'bogus', '--db', sb.db]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /--status must be one of/);
});
