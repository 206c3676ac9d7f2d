/**
 * Values nesting deeper than the JSON limit (128 levels) that arise inside a flow, not in a request
 * body: built up step by step by ntd templates, or answered by a backend to http_egress. Through the
 * real `svc serve`: the flow fails with a deliberate error naming the step and the limit (never a
 * stack overflow's 500 `internal error`), and every log and trace row is written.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { logRows, waitForLogRows } from './helpers/log-reads.js';
import { requestWithHeaders } from './helpers/raw-http.js';
import { createTenant, deployFlow, enableTrace, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

/** Levels each step wraps around its input: within the limit once, past it from the second step. */
const WRAP = 100;
/** Enough steps to reach 10,000 levels, where the walks used to run out of stack, had no step been stopped. */
const STEPS = 100;
const BACKEND_DEPTH = 10_000;

/** STEPS steps, each answering its input inside WRAP nested lists. */
function deepeningSteps(): string {
  const steps: string[] = [];
  for (let i = 1; i <= STEPS; i++)
    steps.push(`## Step: w${i}\n\`\`\`ntd\n${'['.repeat(WRAP)}{{ ctx.input }}${']'.repeat(WRAP)}\n\`\`\``);
  return steps.join('\n\n');
}

const FAULT =
  '## Fault: explain\n```ntd\n{"handled": "{{ ctx.input.fault_error }}", "step": "{{ ctx.input.fault_step }}"}\n```';

describe('values nesting deeper than the limit inside a flow', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let backend: Server;

  const post = (path: string, body: unknown, correlationId: string) =>
    requestWithHeaders(`${server.url}/flows/acme/${path}`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', 'x-correlation-id': correlationId },
    });

  before(async () => {
    const deep = '['.repeat(BACKEND_DEPTH) + ']'.repeat(BACKEND_DEPTH);
    backend = createServer((_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end(deep));
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    const backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;

    createTenant(sandbox, 'acme');
    deployFlow(sandbox, flow('acme', 'deepen', 'log_level: full', deepeningSteps()));
    deployFlow(sandbox, flow('acme', 'deepen-handled', 'log_level: full', `${deepeningSteps()}\n\n${FAULT}`));
    deployFlow(sandbox, flow('acme', 'deepen-queued', 'log_level: full\nqueue_max_attempts: 1', deepeningSteps()));
    deployFlow(
      sandbox,
      flow(
        'acme',
        'fetch-deep',
        'effects: [http_egress]\nlog_level: full',
        '## Step: fetch\neffects: [http_egress]\nendpoint: ${BACKEND_URL}/deep\nmethod: GET',
      ),
    );
    for (const name of ['deepen', 'deepen-handled', 'deepen-queued', 'fetch-deep']) enableTrace(sandbox, 'acme', name);
    server = await startServer(sandbox, ['--no-auth'], { BACKEND_URL: backendUrl });
  });

  after(async () => {
    await server?.stop();
    backend?.closeAllConnections();
    await new Promise<void>((r) => (backend ? backend.close(() => r()) : r()));
    sandbox.cleanup();
  });

  it('a step whose output would nest deeper fails the flow: 500 flow execution failed, the detail names the step and the limit, every row before it is written', async () => {
    const r = await post('deepen/run', { n: 1 }, 'deep-run-1');
    assert.equal(r.status, 500, r.body);
    assert.deepEqual(JSON.parse(r.body), { ok: false, error: 'flow execution failed' });
    const [completed] = await waitForLogRows(sandbox, { correlation_id: 'deep-run-1', event: 'completed' });
    assert.equal(completed!.http_status, 500);
    assert.match(completed!.reason ?? '', /step 'w2': its output nests deeper than 128 levels/);
    const traced = logRows(sandbox, { correlation_id: 'deep-run-1', event: 'step_traced' });
    assert.deepEqual(
      traced.map((row) => row.step),
      ['received', 'w1'],
      'the entry row and the one step that finished',
    );
    const w1 = JSON.parse(traced[1]!.payload!) as unknown;
    let depth = 0;
    for (let v = w1; Array.isArray(v); v = v[0] as unknown) depth++;
    assert.equal(depth, WRAP, 'the first step output is traced whole');
  });

  it('the fault section handles it like any defect in the flow', async () => {
    const r = await post('deepen-handled/run', { n: 1 }, 'deep-run-2');
    assert.equal(r.status, 500, r.body);
    assert.deepEqual(JSON.parse(r.body), {
      handled: "step 'w2': its output nests deeper than 128 levels, the limit for JSON values",
      step: 'w2',
    });
  });

  it('a backend answering JSON nested 10,000 deep fails the egress step (502), and its egress_traced row is written', async () => {
    const r = await post('fetch-deep/run', {}, 'deep-run-3');
    assert.equal(r.status, 502, r.body);
    assert.deepEqual(JSON.parse(r.body), { ok: false, error: 'flow execution failed' });
    const [completed] = await waitForLogRows(sandbox, { correlation_id: 'deep-run-3', event: 'completed' });
    assert.match(
      completed!.reason ?? '',
      /step 'fetch': backend declared JSON but the body nests deeper than 128 levels/,
    );
    const [egress] = logRows(sandbox, { correlation_id: 'deep-run-3', event: 'egress_traced' });
    assert.ok(egress, 'the egress row is written');
    assert.equal(egress.http_status, 200);
  });

  it('a queued delivery fails the same way and is dead-lettered with the reason; its rows are all written', async () => {
    const r = await post('deepen-queued/enqueue', { n: 1 }, 'deep-queue-1');
    assert.equal(r.status, 202, r.body);
    // queue_failed carries no correlation id (the spec's rule for boundary rows of the queue).
    const [failed] = await waitForLogRows(sandbox, { flow: 'deepen-queued', event: 'queue_failed' });
    assert.match(failed!.reason ?? '', /step 'w2': its output nests deeper than 128 levels/);
    assert.equal(failed!.outcome, 'dead_lettered');
    const [moved] = await waitForLogRows(sandbox, { correlation_id: 'deep-queue-1', event: 'dlq_moved' });
    assert.match(moved!.reason ?? '', /nests deeper than 128 levels/);
    const traced = await waitForLogRows(sandbox, { correlation_id: 'deep-queue-1', event: 'step_traced' }, 3);
    // `enqueued` may come after the worker's rows on PostgreSQL (docs/tracing.md); the rest keep their order.
    assert.deepEqual(
      traced.map((row) => row.step).sort((a, b) => Number(b === 'enqueued') - Number(a === 'enqueued')),
      ['enqueued', 'dequeued', 'w1'],
    );
  });

  it('the server stays up and never reports a row it could not write', async () => {
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    assert.doesNotMatch(server.stderr(), /batch not written|Maximum call stack/);
  });
});
