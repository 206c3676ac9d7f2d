/** Black-box: `svc simulate` against a server with the demo set deployed: the counts agree with the server's log, keys are read and refused as documented, a 401 stops, a 404 withdraws. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { logRows } from './helpers/log-reads.js';
import { createKey, createTenant, flow, revokeKey } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, SVC_BIN, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

/** examples/demo in the source tree (this file runs from dist/test/). */
const DEMO_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../examples/demo');

interface Row {
  requests: number;
  run: number;
  enqueue: number;
  statuses: Record<string, number>;
}
interface Summary {
  run_id: string;
  stopped: string;
  total: Row;
  flows: (Row & { flow: string })[];
  withdrawn: { flow: string; route: string; status: number; reason: string }[];
}

describe('svc simulate', () => {
  const sb = makeSandbox();
  let server: ServerProcess;
  let key: string;
  const simulate = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    svc(sb, ['simulate', '--url', server.url, '--demo-dir', DEMO_DIR, ...args], { env });
  /** run_id of every run whose summary was read: rows of any other run are the running one's. */
  const seenRuns = new Set<string>();
  const summaryOf = (stdout: string) => {
    const s = JSON.parse(stdout) as Summary;
    seenRuns.add(s.run_id);
    return s;
  };

  before(async () => {
    createTenant(sb, 'demo');
    for (const f of readdirSync(DEMO_DIR).filter((n) => n.endsWith('.flow.md'))) {
      const r = svc(sb, ['deploy', join(DEMO_DIR, f), '-v', '1.0.0', '--db', sb.db]);
      assert.equal(r.code, 0, `deploy ${f}: ${r.stderr}`);
    }
    key = createKey(sb, 'demo', { label: 'simulate' });
    server = await startServer(sb);
  });

  after(async () => {
    await server?.stop();
    sb.cleanup();
  });

  it("sends /run and /enqueue traffic whose summary count equals the server's received and enqueued rows", async () => {
    const r = simulate(['--duration', '3', '--json', '--api-key', `demo=${key}`]);
    assert.equal(r.code, 0, r.stderr);
    const s = summaryOf(r.stdout);
    assert.equal(s.stopped, 'duration');
    assert.ok(s.total.run > 0 && s.total.enqueue > 0, JSON.stringify(s.total));
    assert.ok(s.total.enqueue < s.total.run, 'about a third goes to /enqueue');
    assert.equal(
      s.flows.length,
      readdirSync(DEMO_DIR).filter((n) => n.endsWith('.flow.md')).length,
      'every demo flow gets traffic',
    );
    const ours = (event: string) =>
      logRows(sb, { event }).filter((row) => row.correlation_id?.startsWith(`${s.run_id}-`));
    // Only submissions through /enqueue: order-intake's own queue_publish rows carry its /run's id.
    const enqueued = () =>
      ours('queue_enqueued').filter(
        (row) => (JSON.parse(String(row.payload)) as { source?: string }).source === 'enqueue',
      );
    // The log writer batches (every 100 ms): wait until the rows are all there.
    await waitFor(
      `${s.total.requests} received + enqueued rows`,
      () => ours('received').length + enqueued().length >= s.total.requests,
    );
    assert.equal(ours('received').length, s.total.run);
    assert.equal(enqueued().length, s.total.enqueue);
  });

  it('refuses a bare key with exit 1, naming the form tenant=key', () => {
    const r = simulate(['--duration', '1', '--api-key', key]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /--api-key <tenant>=<key>/);
    assert.equal(r.stdout, '');
    const env = simulate(['--duration', '1'], { SVC_SIMULATE_API_KEYS: key });
    assert.equal(env.code, 1);
    assert.match(env.stderr, /SVC_SIMULATE_API_KEYS.*--api-key <tenant>=<key>/);
  });

  it('reads the keys from SVC_SIMULATE_API_KEYS when no flag is given', () => {
    const r = simulate(['--duration', '1', '--json'], { SVC_SIMULATE_API_KEYS: `other=svk_unused,demo=${key}` });
    assert.equal(r.code, 0, r.stderr);
    const s = summaryOf(r.stdout);
    assert.ok(s.total.requests > 0);
    assert.equal(s.total.statuses['401'], undefined);
  });

  it('stops at once with exit 1 on a 401 (a revoked key)', () => {
    const revoked = createKey(sb, 'demo', { label: 'to-revoke' });
    revokeKey(sb, revoked);
    const r = simulate(['--duration', '20', '--json', '--connections', '1', '--api-key', `demo=${revoked}`]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /401 .*key for tenant "demo" was refused \(wrong, revoked or expired\)/);
    const s = summaryOf(r.stdout);
    assert.equal(s.stopped, 'unauthorized');
    assert.deepEqual(s.total.statuses, { '401': 1 }, 'nothing is sent after the 401');
  });

  it('withdraws a flow that answers 404 while the others go on, and skips tenants without a key', () => {
    const dir = join(sb.home, 'demo-plus');
    mkdirSync(dir);
    for (const f of ['hello.flow.md', 'hello.sample.json']) copyFileSync(join(DEMO_DIR, f), join(dir, f));
    writeFileSync(
      join(dir, 'ghost.flow.md'),
      flow('demo', 'ghost', '', '# Ghost\n\n## Step: answer\n```ntd\n{"ok": true}\n```'),
    );
    writeFileSync(join(dir, 'ghost.sample.json'), 'null');
    writeFileSync(
      join(dir, 'elsewhere.flow.md'),
      flow('other', 'elsewhere', '', '# Elsewhere\n\n## Step: answer\n```ntd\n{"ok": true}\n```'),
    );
    writeFileSync(join(dir, 'elsewhere.sample.json'), '{}');
    const r = svc(sb, [
      'simulate',
      '--url',
      server.url,
      '--demo-dir',
      dir,
      '--duration',
      '2',
      '--connections',
      '1',
      '--json',
      '--api-key',
      `demo=${key}`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stderr,
      /withdrawn: demo\/ghost: its \/(run|enqueue) answered 404 .*neither \/run nor \/enqueue is sent to it again/,
    );
    assert.match(r.stderr, /tenant "other" has no key/);
    const s = summaryOf(r.stdout);
    const ghost = s.flows.find((f) => f.flow === 'demo/ghost')!;
    const hello = s.flows.find((f) => f.flow === 'demo/hello')!;
    // The spec: "403 and 404 withdraw the flow from the rotation": one 404, then neither route.
    assert.equal(ghost.statuses['404'], 1, 'one 404, then never sent again');
    assert.equal(ghost.requests, 1, `ghost got nothing after its 404: ${JSON.stringify(ghost)}`);
    assert.deepEqual(
      s.withdrawn.map((w) => [w.flow, w.status]),
      [['demo/ghost', 404]],
    );
    assert.ok(hello.run > 10, `hello goes on: ${JSON.stringify(hello)}`);
    assert.equal(
      s.flows.find((f) => f.flow === 'other/elsewhere'),
      undefined,
    );
  });

  it('Ctrl-C (SIGINT) ends the run early with the summary and exit 0', async () => {
    const child = spawn(
      process.execPath,
      [
        SVC_BIN,
        'simulate',
        '--url',
        server.url,
        '--demo-dir',
        DEMO_DIR,
        '--duration',
        '60',
        '--json',
        '--api-key',
        `demo=${key}`,
      ],
      {
        cwd: sb.home,
        env: sb.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    // Signal only once the run is under way (its handler installed, as its start line says) and has sent something.
    const runId = await waitFor("the run's start line", () => /run (sim-[0-9a-f]+) started/.exec(stderr)?.[1]);
    await waitFor('traffic from the run', () =>
      logRows(sb, { event: 'received' }).some((r) => String(r.correlation_id).startsWith(`${runId}-`)),
    );
    child.kill('SIGINT');
    assert.equal(await exited, 0);
    const s = summaryOf(stdout);
    assert.equal(s.stopped, 'interrupted');
    assert.ok(s.total.requests > 0);
  });
});
