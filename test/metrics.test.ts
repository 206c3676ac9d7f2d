/**
 * `GET /metrics` (svc serve --metrics): after a scripted run (a /run, a failing /run, a refusal,
 * an /enqueue that dead-letters, a registered certificate) the Prometheus text exposition carries
 * the documented names, labels and values (docs/observability.md).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { enqueue, flowSource, tenantWithKey } from './helpers/queue-flows.js';
import { deployFlow } from './helpers/registry-setup.js';
import { sample } from './helpers/metrics-text.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const OK = flowSource('ok', [], '## Step: answer\n```ntd\n{"ok": true}\n```\n');
/** Fails on every run: the secret it reads is never set. */
const BROKEN = flowSource(
  'broken',
  ['effects: [secret_read]', 'queue_max_attempts: 1'],
  '## Step: gate_open\neffects: [secret_read]\n',
);

describe('GET /metrics with svc serve --metrics', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let key = '';

  before(async () => {
    key = tenantWithKey(sandbox);
    deployFlow(sandbox, OK);
    deployFlow(sandbox, BROKEN);
    const pem = join(sandbox.home, 'client.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(sandbox.home, 'client.key'),
        '-out',
        pem,
        '-days',
        '10',
        '-subj',
        '/CN=metrics.example',
      ],
      { stdio: 'ignore' },
    );
    const added = svc(sandbox, [
      'cert',
      'add',
      pem,
      '--tenant',
      'acme',
      '--name',
      'billing-client',
      '--db',
      sandbox.db,
    ]);
    assert.equal(added.code, 0, added.stderr);
    server = await startServer(sandbox, ['--metrics']);
  });
  after(async () => {
    await server.stop();
    sandbox.cleanup();
  });

  const run = (flowName: string, auth: string | undefined) =>
    fetch(`${server.url}/flows/acme/${flowName}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
      body: '{}',
    });
  const scrape = async (): Promise<string> => {
    const res = await fetch(`${server.url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    return res.text();
  };

  it('is announced on the boot output and public (no key needed)', () => {
    assert.match(server.output(), new RegExp(`metrics: +${server.url.replace(/[.]/g, '\\.')}/metrics`));
  });

  it('counts requests, executions, refusals, queue outcomes and dead letters, and reads queue and certificate figures at scrape time', async () => {
    assert.equal((await run('ok', `Bearer ${key}`)).status, 200);
    assert.equal((await run('broken', `Bearer ${key}`)).status, 502);
    assert.equal((await run('ok', undefined)).status, 401);
    assert.equal((await enqueue(server.url, 'broken', '{"n":1}', { key })).status, 202);

    const text = await waitFor('the dead letter in the metrics', async () => {
      const t = await scrape();
      // The backlog is read from the queue's files: it reaches 0 once the worker's checkpoint is written.
      const settled =
        sample(t, 'svc_queue_dead_letters{tenant="acme",flow="broken"}') === 1 &&
        sample(t, 'svc_queue_messages_pending{tenant="acme",flow="broken"}') === 0;
      return settled ? t : undefined;
    });
    const run200 = 'svc_http_requests_total{route="/flows/:tenant/:name/run",status="200"}';
    const expected: [string, number][] = [
      [run200, 1],
      ['svc_http_requests_total{route="/flows/:tenant/:name/run",status="502"}', 1],
      ['svc_http_requests_total{route="/flows/:tenant/:name/run",status="401"}', 1],
      ['svc_http_requests_total{route="/flows/:tenant/:name/enqueue",status="202"}', 1],
      ['svc_http_request_duration_seconds_count{route="/flows/:tenant/:name/run"}', 3],
      ['svc_flow_executions_total{tenant="acme",flow="ok",door="http",outcome="succeeded"}', 1],
      ['svc_flow_executions_total{tenant="acme",flow="broken",door="http",outcome="failed"}', 1],
      ['svc_flow_executions_total{tenant="acme",flow="broken",door="queue",outcome="failed"}', 1],
      ['svc_flow_execution_duration_seconds_count{tenant="acme",flow="ok",door="http"}', 1],
      ['svc_gate_refusals_total{status="401"}', 1],
      ['svc_queue_messages_failed_total{tenant="acme",flow="broken"}', 1],
      ['svc_queue_messages_pending{tenant="acme",flow="broken"}', 0],
      ['svc_queue_retries_scheduled{tenant="acme",flow="broken"}', 0],
    ];
    for (const [series, value] of expected) assert.equal(sample(text, series), value, series);
    const expiry = sample(text, 'svc_certificate_expiration_timestamp_seconds{tenant="acme",name="billing-client"}');
    assert.ok(
      expiry !== undefined && Math.abs(expiry - (Date.now() / 1000 + 10 * 86_400)) < 2 * 86_400,
      `certificate expiry ${expiry}`,
    );
    // A worker gives its slot back after queue_worker_idle_ms: 1 while it still holds it, then 0.
    assert.ok([0, 1].includes(sample(text, 'svc_queue_workers_running')!), 'svc_queue_workers_running');
    for (const family of [
      'svc_event_log_queued_rows',
      'svc_audit_queued_entries',
      'svc_event_log_dropped_rows_total',
      'svc_process_cpu_user_seconds_total',
      'svc_nodejs_heap_size_used_bytes',
    ]) {
      assert.ok(
        text.split('\n').some((l) => l.startsWith(`${family} `)),
        `${family} is exposed`,
      );
    }
    // Histograms of the writers fill as batches are written.
    await waitFor(
      'an event-log batch observed',
      async () => (sample(await scrape(), 'svc_event_log_batch_duration_seconds_count') ?? 0) > 0 || undefined,
    );
    // Every family has HELP and TYPE, and no label carries a correlation id, a key or a path.
    for (const line of text
      .split('\n')
      .filter((l) => l.startsWith('svc_') && !l.startsWith('svc_nodejs') && !l.startsWith('svc_process'))) {
      assert.doesNotMatch(line, /svk_|correlation|\/flows\/acme/, line);
    }
    assert.match(text, /# TYPE svc_http_requests_total counter/);
    assert.match(text, /# TYPE svc_http_request_duration_seconds histogram/);
  });

  it('labels other routes by their template, and requests no route took as unmatched', async () => {
    await (await fetch(`${server.url}/health`)).arrayBuffer();
    await (await fetch(`${server.url}/no/such/route`)).arrayBuffer();
    const text = await scrape();
    assert.ok((sample(text, 'svc_http_requests_total{route="/health",status="200"}') ?? 0) >= 1);
    assert.ok((sample(text, 'svc_http_requests_total{route="unmatched",status="404"}') ?? 0) >= 1);
  });
});
