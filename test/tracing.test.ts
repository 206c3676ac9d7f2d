/**
 * Payload tracing through the real `svc serve` (HTTP, SOAP, gRPC, queue and cron doors) with the flag
 * toggled by `svc trace` from a second process while the server runs: entry labels, composition and
 * fault rows, masking, the XML marker, egress rows, the audit trail of toggles, and who reads the rows.
 */
import { status } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readTraceRows } from '../src/app/use-cases/trace.js';
import { descriptorSetFromProto, testClient, type GreeterTestClient } from './helpers/grpc.js';
import { auditRows, logRows, waitForLogRows, withEventLog, type LogRow } from './helpers/log-reads.js';
import { createKey, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, ON_PG_STORE, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { sleep, waitFor } from './helpers/wait.js';

const PROTO = `
syntax = "proto3";
package trace.v1;
message Req { string who = 1; }
message Rep { string text = 1; }
service Greeter { rpc Greet (Req) returns (Rep); }
`;
const ECHO = '## Step: echo\n```ntd\n{"who": "{{ ctx.input.who }}"}\n```';

describe('payload tracing', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let grpc: GreeterTestClient;
  let key = '';
  const headers = (extra: Record<string, string> = {}) => ({
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
    ...extra,
  });
  const run = (name: string, body: string, correlationId: string, extra: Record<string, string> = {}) =>
    fetch(`${server.url}/flows/acme/${name}/run`, {
      method: 'POST',
      headers: headers({ 'x-correlation-id': correlationId, ...extra }),
      body,
    });
  const trace = (verb: 'enable' | 'disable', name: string) =>
    svc(sandbox, ['trace', verb, '--tenant', 'acme', '--flow', name, '--db', sandbox.db]);
  const traced = (correlationId: string): LogRow[] =>
    logRows(sandbox, { correlation_id: correlationId }).filter((r) => r.event.endsWith('_traced'));
  const labels = (rows: LogRow[]) => rows.filter((r) => r.event === 'step_traced').map((r) => `${r.flow}:${r.step}`);

  let probes = 0;
  /**
   * The trace flags just toggled, in force on the server. The state directory's server reads them at
   * its next request: nothing to wait for. A --store node applies the store's change log a few
   * milliseconds after the command returned (docs/scale-out.md), so a request sent at once may come
   * first: probe requests (`send`, each with a correlation id of its own) until one's trace rows
   * satisfy `ready`.
   */
  async function flagsInForce(
    send: (correlationId: string) => Promise<unknown>,
    ready: (rows: LogRow[]) => boolean,
  ): Promise<void> {
    if (!ON_PG_STORE) return;
    await waitFor(
      'the trace toggle in force on the node',
      async () => {
        const id = `probe-${++probes}`;
        await send(id);
        // Rows are written in order: once the completed row is there, so are the run's trace rows.
        await waitForLogRows(sandbox, { correlation_id: id, event: 'completed' });
        return ready(traced(id));
      },
      15_000,
      0,
    );
  }
  /** A probe of `name` by /run that is in force once it writes trace rows (none, for `on` false). */
  const runFlagsInForce = (name: string, body: string, on = true) =>
    flagsInForce(
      async (id) => void (await (await run(name, body, id)).arrayBuffer()),
      (rows) => rows.length > 0 === on,
    );

  before(async () => {
    createTenant(sandbox, 'acme');
    key = createKey(sandbox, 'acme');
    deployFlow(sandbox, flow('acme', 'hello', 'log_extra_mask_fields: [iban]', ECHO));
    deployFlow(sandbox, flow('acme', 'xmlish', '', '## Step: echo\n```ntd\n{"ok": true}\n```'));
    deployFlow(sandbox, flow('acme', 'leaf', '', '## Step: x\n```ntd\n{"leaf": true}\n```'));
    deployFlow(
      sandbox,
      flow(
        'acme',
        'composed',
        '',
        '## Step: call\ncall_flow: leaf\n\n## Step: each\nforeach: "[1, 2]"\n```ntd\n{"i": {{ ctx.index }}}\n```\n\n## Step: sp\nsplit: "[1, 2]"\ncall_flow: leaf\n\n## Step: fk\nfork: [leaf]',
      ),
    );
    deployFlow(
      sandbox,
      flow(
        'acme',
        'faulty',
        '',
        '## Step: check\n```validate\nctx.input.n > 0 | n must be positive | semantic\n```\n\n## Fault: sorry\n```ntd\n{"sorry": "{{ ctx.input.fault_error }}"}\n```',
      ),
    );
    deployFlow(
      sandbox,
      flow(
        'acme',
        'refused',
        'effects: [http_egress]',
        '## Step: call\neffects: [http_egress]\nendpoint: http://127.0.0.1:1/x\nmethod: POST\nconnect_timeout_ms: 500',
      ),
    );
    deployFlow(sandbox, flow('acme', 'tick', 'schedule: "* * * * * *"', '## Step: t\n```ntd\n{"tick": true}\n```'));
    deployFlow(
      sandbox,
      flow(
        'acme',
        'greet',
        'inbound: grpc\ngrpc_method: trace.v1.Greeter/Greet',
        '## Step: g\n```ntd\n{"text": "hi {{ ctx.input.who }}"}\n```',
      ),
    );
    const setPath = join(sandbox.home, 'trace.pb');
    writeFileSync(setPath, descriptorSetFromProto([PROTO]));
    assert.equal(
      svc(sandbox, [
        'proto',
        'deploy',
        setPath,
        '--tenant',
        'acme',
        '--name',
        'trace',
        '--version',
        '1',
        '--latest',
        '--db',
        sandbox.db,
      ]).code,
      0,
    );
    server = await startServer(sandbox, ['--grpc-port', '0']);
    const address = /grpc listening on (127\.0\.0\.1:\d+)/.exec(server.output())?.[1];
    assert.ok(address, server.output());
    grpc = testClient(address, descriptorSetFromProto([PROTO]));
  });
  after(async () => {
    grpc?.close();
    await server?.stop();
    sandbox.cleanup();
  });

  it('is off by default: a run writes its boundary rows and no trace row', async () => {
    assert.equal((await run('hello', '{"who": "ada"}', 'off-1')).status, 200);
    await waitForLogRows(sandbox, { correlation_id: 'off-1', event: 'completed' });
    assert.deepEqual(traced('off-1'), []);
  });

  it('svc trace enable, run by another process while the server runs, takes effect without a restart; once audited, a repeat writes nothing', async () => {
    const first = trace('enable', 'hello');
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /tracing of acme\/hello is now on/);
    const again = trace('enable', 'hello');
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /already on; nothing changed/);
    const audited = auditRows(sandbox, 'acme').filter((r) => r.event_type.startsWith('trace_'));
    assert.deepEqual(
      audited.map((r) => [r.event_type, JSON.parse(r.payload)]),
      [['trace_enabled', { flow: 'hello', actor: 'cli' }]],
    );
    const list = JSON.parse(
      svc(sandbox, ['trace', 'list', '--tenant', 'acme', '--json', '--db', sandbox.db]).stdout,
    ) as { flow: string; enabled: boolean }[];
    assert.deepEqual(
      list.map((f) => [f.flow, f.enabled]),
      [['hello', true]],
    );
    await runFlagsInForce('hello', '{"who": "probe"}');
    assert.equal((await run('hello', '{"who": "ada"}', 'on-1')).status, 200);
    const rows = await waitForLogRows(sandbox, { correlation_id: 'on-1', event: 'step_traced' }, 2);
    assert.deepEqual(
      rows.map((r) => r.step),
      ['received', 'echo'],
    );
  });

  it('masks nested secret fields (the global list and log_extra_mask_fields) and keeps the payload whole', async () => {
    const long = 'x'.repeat(10_000); // well past log_payload_max_bytes (4096): trace rows are not truncated
    const body = JSON.stringify({
      who: 'ada',
      note: long,
      account: { iban: 'DE89370400440532013000', owner: { password: 'hunter2', token: 'tok-123' } },
    });
    assert.equal((await run('hello', body, 'mask-1')).status, 200);
    const [entry] = await waitForLogRows(sandbox, { correlation_id: 'mask-1', event: 'step_traced', step: 'received' });
    assert.equal(entry!.payload_truncated, 0);
    const payload = JSON.parse(entry!.payload!) as {
      note: string;
      account: { iban: string; owner: { password: string; token: string } };
    };
    assert.equal(payload.note, long);
    for (const secret of ['DE89370400440532013000', 'hunter2', 'tok-123'])
      assert.ok(!entry!.payload!.includes(secret), `${secret} leaked`);
    assert.ok('iban' in payload.account && 'password' in payload.account.owner && 'token' in payload.account.owner);
  });

  it('an XML input is traced as an _unrepresentable marker naming its root; a SOAP request enters as received', async () => {
    assert.equal(trace('enable', 'xmlish').code, 0);
    await runFlagsInForce('xmlish', '{}');
    assert.equal(
      (await run('xmlish', '<order><who>ada</who></order>', 'xml-1', { 'content-type': 'application/xml' })).status,
      200,
    );
    const [entry] = await waitForLogRows(sandbox, { correlation_id: 'xml-1', event: 'step_traced', step: 'received' });
    assert.deepEqual(JSON.parse(entry!.payload!), { _unrepresentable: 'order' });
    const envelope =
      '<?xml version="1.0"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><order><who>ada</who></order></soap:Body></soap:Envelope>';
    assert.equal(
      (await run('xmlish', envelope, 'soap-1', { 'content-type': 'text/xml; charset=utf-8', soapaction: '"Order"' }))
        .status,
      200,
    );
    const soapRows = await waitForLogRows(sandbox, { correlation_id: 'soap-1', event: 'step_traced' }, 2);
    assert.deepEqual(
      soapRows.map((r) => r.step),
      ['received', 'echo'],
    );
  });

  it("/enqueue writes enqueued, and the worker dequeued, for the same correlation id, both masked with the flow's fields", async () => {
    const body = '{"who": "queued", "iban": "DE89370400440532013000"}';
    const res = await fetch(`${server.url}/flows/acme/hello/enqueue`, {
      method: 'POST',
      headers: headers({ 'x-correlation-id': 'q-1' }),
      body,
    });
    assert.equal(res.status, 202);
    const rows = await waitForLogRows(sandbox, { correlation_id: 'q-1', event: 'step_traced' }, 3);
    // `enqueued` may come after the worker's rows on PostgreSQL (docs/tracing.md); the rest keep their order.
    assert.deepEqual(
      rows.map((r) => r.step).sort((a, b) => Number(b === 'enqueued') - Number(a === 'enqueued')),
      ['enqueued', 'dequeued', 'echo'],
    );
    for (const row of rows.filter((r) => r.step !== 'echo')) {
      assert.equal((JSON.parse(row.payload!) as { who: string }).who, 'queued');
      assert.ok(!row.payload!.includes('DE8937'), `${row.step} leaked the iban`);
    }
  });

  it('composition writes call_flow, foreach[i], split[i] and fork[i] entry rows', async () => {
    const expected = [
      'composed:received',
      'leaf:call_flow',
      'composed:foreach[0]',
      'composed:foreach[1]',
      'leaf:split[0]',
      'leaf:split[1]',
      'leaf:fork[0]',
      'composed:fk',
    ];
    assert.equal(trace('enable', 'composed').code, 0);
    assert.equal(trace('enable', 'leaf').code, 0);
    // Both flags in force: a probe writes the rows of both flows.
    await flagsInForce(
      async (id) => void (await (await run('composed', '{}', id)).arrayBuffer()),
      (rows) => expected.every((l) => labels(rows).includes(l)),
    );
    assert.equal((await run('composed', '{}', 'comp-1')).status, 200);
    const rows = await waitForLogRows(sandbox, {
      correlation_id: 'comp-1',
      event: 'step_traced',
      flow: 'composed',
      step: 'fk',
    });
    assert.ok(rows.length === 1);
    const got = labels(traced('comp-1'));
    for (const label of expected) {
      assert.ok(got.includes(label), `${label} missing from ${got.join(', ')}`);
    }
  });

  it('a handled failure writes the fault entry row with fault_step, fault_error and fault_correlation_id', async () => {
    assert.equal(trace('enable', 'faulty').code, 0);
    await runFlagsInForce('faulty', '{"n": -1}');
    assert.equal((await run('faulty', '{"n": -1}', 'fault-1')).status, 422);
    const [row] = await waitForLogRows(sandbox, { correlation_id: 'fault-1', event: 'step_traced', step: 'fault' });
    assert.deepEqual(JSON.parse(row!.payload!), {
      fault_step: 'check',
      fault_error: 'n must be positive',
      fault_correlation_id: 'fault-1',
      fault_status: 422,
      fault_kind: 'validation',
    });
  });

  it('a refused connection still writes egress_traced: no status, body null, the reason given', async () => {
    assert.equal(trace('enable', 'refused').code, 0);
    await runFlagsInForce('refused', '{}');
    assert.equal((await run('refused', '{}', 'egress-1')).status, 502);
    const [row] = await waitForLogRows(sandbox, { correlation_id: 'egress-1', event: 'egress_traced' });
    assert.equal(row!.http_status, null);
    assert.deepEqual(JSON.parse(row!.payload!), { headers: {}, body: null });
    assert.match(row!.reason ?? '', /refused|connect/i);
    assert.deepEqual(
      labels(traced('egress-1')),
      ['refused:received'],
      'a plain http_egress step has no step_traced row',
    );
  });

  it('a gRPC call enters as received', async () => {
    assert.equal(trace('enable', 'greet').code, 0);
    await flagsInForce(
      (id) =>
        grpc.unary(
          'trace.v1.Greeter/Greet',
          { who: 'probe' },
          { authorization: `Bearer ${key}`, 'x-correlation-id': id },
        ),
      (rows) => rows.length > 0,
    );
    assert.deepEqual(
      await grpc.unary(
        'trace.v1.Greeter/Greet',
        { who: 'ada' },
        { authorization: `Bearer ${key}`, 'x-correlation-id': 'grpc-1' },
      ),
      { text: 'hi ada' },
    );
    const rows = await waitForLogRows(sandbox, { correlation_id: 'grpc-1', event: 'step_traced' }, 2);
    assert.deepEqual(
      rows.map((r) => r.step),
      ['received', 'g'],
    );
    await assert.rejects(
      grpc.unary('trace.v1.Greeter/Greet', { who: 'ada' }),
      (err: { code: number }) => err.code === status.UNAUTHENTICATED,
    );
  });

  it('a cron tick enters as scheduled', async () => {
    assert.equal(trace('enable', 'tick').code, 0);
    const [row] = await waitForLogRows(sandbox, { flow: 'tick', event: 'step_traced', step: 'scheduled' });
    assert.equal(JSON.parse(row!.payload!), null, 'a tick runs on null input');
  });

  it('only the support role reads trace rows; other roles get zero, and ordinary log queries never return them', async () => {
    await withEventLog(sandbox, async (log) => {
      const support = await readTraceRows(
        log,
        { tenant: 'acme', correlation_id: 'on-1' },
        { role: 'support', name: 'sue' },
      );
      assert.deepEqual(
        support.map((r) => r.step),
        ['received', 'echo'],
      );
      for (const role of ['sysadmin', 'developer'] as const)
        assert.deepEqual(await readTraceRows(log, { tenant: 'acme' }, { role, name: role }), []);
      const ordinary = await log.query({ correlation_id: 'on-1' });
      assert.ok(ordinary.every((r) => !r.event.endsWith('_traced')));
      assert.ok(ordinary.some((r) => r.event === 'completed'));
    });
  });

  it('svc trace disable stops the rows at the next request and is audited once', async () => {
    const r = trace('disable', 'hello');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(trace('disable', 'hello').code, 0);
    await runFlagsInForce('hello', '{"who": "probe"}', false);
    assert.deepEqual(
      auditRows(sandbox, 'acme')
        .filter((x) => x.event_type === 'trace_disabled')
        .map((x) => JSON.parse(x.payload).flow),
      ['hello'],
    );
    assert.equal((await run('hello', '{"who": "ada"}', 'off-2')).status, 200);
    await waitForLogRows(sandbox, { correlation_id: 'off-2', event: 'completed' });
    await sleep(150); // one more writer batch: no trace row may trail the completed row
    assert.deepEqual(traced('off-2'), []);
  });

  it('refuses a flow that is not deployed and a tenant that is not registered, changing nothing', () => {
    const before = auditRows(sandbox, 'acme').length;
    const missing = trace('enable', 'nope');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /flow 'acme\/nope' is not deployed/);
    const stranger = svc(sandbox, ['trace', 'enable', '--tenant', 'globex', '--flow', 'hello', '--db', sandbox.db]);
    assert.equal(stranger.code, 1);
    assert.match(stranger.stderr, /tenant "globex" is not registered/);
    assert.equal(auditRows(sandbox, 'acme').length, before);
    const flows = (
      JSON.parse(svc(sandbox, ['trace', 'list', '--json', '--db', sandbox.db]).stdout) as { flow: string }[]
    ).map((f) => f.flow);
    assert.ok(!flows.includes('nope'));
  });
});
