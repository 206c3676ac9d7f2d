/**
 * Black-box (issue 36, say why): a flow with a `## Fault:` section, failing four ways (a backend
 * answering 503, a validate rule, an expression reading a missing key, a call out timing out). For
 * each: what the handler saw in `ctx.input`, the log row's reason (with the failing step named),
 * the UI's Executions page, and the caller's status and body (the handler's, with the status the
 * error would have had). Then a queue delivery handled by its fault section, and a dedup replay
 * marked as such in `svc logs --json` and on the delivery page.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { events } from './helpers/queue-flows.js';
import { createKey, createTenant, deployFlows, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { uiLogin } from './helpers/ui-login.js';
import { waitFor } from './helpers/wait.js';

const FEATURE_EXAMPLE = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '../../examples/features/fault-handler.flow.md',
);

/** The fault section of every flow here: it answers with everything it was told. */
const TELL_ALL = '## Fault: explain\n```ntd\n{"seen": "{{ ctx.input }}"}\n```\n';
const SHIP = (path: string, extra = '') =>
  `## Step: ship\neffects: [http_egress]\nendpoint: \${BACKEND_URL}${path}\n${extra}`;

interface Seen {
  fault_step: string | null;
  fault_error: string;
  fault_correlation_id: string;
  fault_status: number;
  fault_kind: string;
  fault_backend_status?: number;
}

describe('a fault handler sees the cause, and the log keeps it', () => {
  const sandbox = makeSandbox();
  let backend: Server;
  let server: ServerProcess;
  let key = '';
  /** Bodies the backend's /alerts received. */
  const alerts: unknown[] = [];

  before(async () => {
    backend = createServer((req, res) => {
      req.resume();
      if (req.url === '/down') return void res.writeHead(503, { 'content-type': 'text/plain' }).end('down for repairs');
      // /slow never answers within the step's read timeout.
      if (req.url === '/slow') return void setTimeout(() => res.writeHead(200).end('{}'), 3000).unref();
      if (req.url === '/alerts') {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        return void req.on('end', () => {
          alerts.push(JSON.parse(body));
          res.writeHead(204).end();
        });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    const backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
    createTenant(sandbox, 'acme');
    key = createKey(sandbox, 'acme');
    const egress = 'effects: [http_egress]';
    deployFlows(sandbox, [
      flow('acme', 'down', egress, `${SHIP('/down')}\n${TELL_ALL}`),
      flow('acme', 'down-bare', egress, SHIP('/down')),
      flow(
        'acme',
        'rule',
        '',
        '## Step: check\n```validate\nctx.input.n > 0 | n must be positive | semantic\n```\n\n' + TELL_ALL,
      ),
      flow('acme', 'typo', '', '## Step: total\n```ntd\n{"t": "{{ ctx.input.totl + 1 }}"}\n```\n\n' + TELL_ALL),
      flow('acme', 'typo-bare', '', '## Step: total\n```ntd\n{"t": "{{ ctx.input.totl + 1 }}"}\n```\n'),
      flow('acme', 'slow', egress, `${SHIP('/slow', 'read_timeout_ms: 200\n')}\n${TELL_ALL}`),
      flow(
        'acme',
        'once',
        'dedup_key: ctx.input.order_id\ndedup_memoize_response: true',
        '## Step: accept\n```ntd\n{"accepted": "{{ ctx.input.order_id }}"}\n```\n',
      ),
      // The feature example, its two hosts pointed at the loopback backend.
      readFileSync(FEATURE_EXAMPLE, 'utf8')
        .replace('https://unreliable.example.com/x', '${BACKEND_URL}/down')
        .replace('https://alerts.example.com/hook', '${BACKEND_URL}/alerts'),
    ]);
    server = await startServer(sandbox, [], { BACKEND_URL: backendUrl });
  });
  after(async () => {
    await server?.stop();
    await new Promise<void>((r) => backend?.close(() => r()));
    sandbox.cleanup();
  });

  const run = async (name: string, body: unknown, correlationId?: string) => {
    const res = await fetch(`${server.url}/flows/acme/${name}/run`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        ...(correlationId === undefined ? {} : { 'x-correlation-id': correlationId }),
      },
      body: JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as { seen: Seen } };
  };
  /** The `completed` row of a delivery, once the log writer has it. */
  const completedRow = async (correlationId: string) => {
    const where = "event = 'completed' AND correlation_id = ?";
    await waitFor(`the completed row of ${correlationId}`, () => events(sandbox, where, [correlationId]).length > 0);
    return events(sandbox, where, [correlationId])[0]!;
  };

  it('a backend answering 503: fault_error is the log reason of the same failure without a handler; kind call_out, backend status 503', async () => {
    const bare = await run('down-bare', {}, 'cause-bare-1');
    assert.equal(bare.status, 502);
    const bareReason = (await completedRow('cause-bare-1')).reason;
    assert.equal(bareReason, "step 'ship': backend answered HTTP 503");

    const handled = await run('down', {}, 'cause-down-1');
    assert.equal(handled.status, 502, 'the caller gets the status the error would otherwise have had');
    assert.deepEqual(handled.body.seen, {
      fault_step: 'ship',
      fault_error: bareReason,
      fault_correlation_id: 'cause-down-1',
      fault_status: 502,
      fault_kind: 'call_out',
      fault_backend_status: 503,
    });
    const row = await completedRow('cause-down-1');
    assert.equal(row.step, null, 'a boundary row carries no step');
    assert.equal(row.outcome, 'fault_handled');
    assert.equal(row.reason, `fault handled: ${bareReason}`);
  });

  it('a validate rule: kind validation, the rule as the cause, status 422 kept, the step named in the reason', async () => {
    const r = await run('rule', { n: -1 }, 'cause-rule-1');
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.seen, {
      fault_step: 'check',
      fault_error: 'n must be positive',
      fault_correlation_id: 'cause-rule-1',
      fault_status: 422,
      fault_kind: 'validation',
    });
    assert.equal((await completedRow('cause-rule-1')).reason, "fault handled: step 'check': n must be positive");
  });

  it('an expression reading a missing key: kind expression, the evaluator naming the key, status 500', async () => {
    await run('typo-bare', { total: 1 }, 'cause-typo-bare');
    const bareReason = (await completedRow('cause-typo-bare')).reason!;
    assert.match(bareReason, /^step 'total': ntd failed: .*totl/);
    const r = await run('typo', { total: 1 }, 'cause-typo-1');
    assert.equal(r.status, 500);
    assert.equal(r.body.seen.fault_kind, 'expression');
    assert.equal(r.body.seen.fault_status, 500);
    assert.equal(r.body.seen.fault_error, bareReason);
    assert.equal((await completedRow('cause-typo-1')).reason, `fault handled: ${bareReason}`);
  });

  it('a call out timing out: kind timeout, no backend status', async () => {
    const r = await run('slow', {}, 'cause-slow-1');
    assert.equal(r.status, 502);
    assert.equal(r.body.seen.fault_kind, 'timeout');
    assert.equal(r.body.seen.fault_backend_status, undefined);
    assert.match(r.body.seen.fault_error, /^step 'ship': backend did not answer within the 200 ms read timeout$/);
    assert.equal((await completedRow('cause-slow-1')).reason, `fault handled: ${r.body.seen.fault_error}`);
  });

  it('a queue delivery handled by its fault section: queue_processed, outcome fault_handled, with the cause', async () => {
    const res = await fetch(`${server.url}/flows/acme/down/enqueue`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-correlation-id': 'cause-q-1' },
      body: '{}',
    });
    assert.equal(res.status, 202);
    const where = "event = 'queue_processed' AND correlation_id = 'cause-q-1'";
    await waitFor('the delivery processed', () => events(sandbox, where).length > 0, 20_000);
    const row = events(sandbox, where)[0]!;
    assert.equal(row.outcome, 'fault_handled');
    assert.equal(row.reason, "fault handled: step 'ship': backend answered HTTP 503");
  });

  it('the cause is in svc logs and on the UI Executions page', async () => {
    const logs = svc(sandbox, ['logs', '--correlation-id', 'cause-down-1', '--db', sandbox.db]);
    assert.equal(logs.code, 0, logs.stderr);
    assert.match(
      logs.stdout,
      /completed .*outcome=fault_handled .*reason="fault handled: step 'ship': backend answered HTTP 503"/,
    );
    const password = 'a-long-enough-password-1';
    const added = svc(sandbox, ['ui', 'user', 'add', '--username', 'ops', '--role', 'sysadmin', '--db', sandbox.db], {
      input: `${password}\n`,
    });
    assert.equal(added.code, 0, added.stderr);
    const cookie = await uiLogin(server.url, 'ops', password);
    const page = await (
      await fetch(`${server.url}/ui/executions?view=rows&correlation_id=cause-down-1`, { headers: { cookie } })
    ).text();
    assert.match(page, /fault_handled/);
    assert.match(page, /fault handled: step &#39;ship&#39;: backend answered HTTP 503/);
    // The Deliveries view (the default) names the step on the delivery's one row.
    const deliveries = await (
      await fetch(`${server.url}/ui/executions?correlation_id=cause-down-1`, { headers: { cookie } })
    ).text();
    assert.match(deliveries, /fault_handled<\/span><\/td>[\s\S]*<td>ship<\/td>/);
  });

  it('a dedup replay is marked in the log and on its delivery page, with the first delivery linked', async () => {
    const first = await run('once', { order_id: 'o-1' }, 'cause-first');
    assert.equal(first.status, 200);
    const again = await run('once', { order_id: 'o-1' }, 'cause-again');
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('x-svc-idempotent-replay'), 'true');
    const row = await completedRow('cause-again');
    assert.equal(row.outcome, 'replayed');
    assert.equal(
      row.reason,
      'duplicate dedup_key: replayed the recorded answer of delivery cause-first; the flow did not run',
    );
    assert.equal((await completedRow('cause-first')).outcome, null, 'the first delivery is an ordinary one');
    const logs = svc(sandbox, ['logs', '--correlation-id', 'cause-again', '--json', '--db', sandbox.db]);
    assert.equal(logs.code, 0, logs.stderr);
    const completed = logs.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; outcome?: string; reason?: string })
      .find((e) => e.event === 'completed');
    assert.equal(completed?.outcome, 'replayed');
    assert.match(completed?.reason ?? '', /delivery cause-first/);
    const cookie = await uiLogin(server.url, 'ops', 'a-long-enough-password-1');
    const story = await (await fetch(`${server.url}/ui/executions/cause-again`, { headers: { cookie } })).text();
    assert.match(story, /replayed/);
    assert.match(story, /<a href="\/ui\/executions\/cause-first">cause-first<\/a>/);
  });

  it('examples/features/fault-handler.flow.md: a validation failure keeps its 400 and names the rule; a failed call out answers 503; the cause goes to the alert hook', async () => {
    const invalid = await run('fault-handler', {}, 'example-1');
    assert.equal(invalid.status, 400);
    assert.deepEqual(invalid.body, { error: 'order_id is required', kind: 'validation', id: 'example-1' });
    const down = await run('fault-handler', { order_id: 7 }, 'example-2');
    assert.equal(down.status, 503);
    assert.deepEqual(down.body, { error: 'try again later', kind: 'call_out', id: 'example-2' });
    const alerted = alerts.find((a) => (a as Seen).fault_correlation_id === 'example-2') as Seen;
    assert.equal(alerted.fault_error, "step 'call': backend answered HTTP 503");
    assert.equal(alerted.fault_backend_status, 503);
  });
});
