import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileFlow } from '../../flow/compile.js';
import type { FlowIR } from '../../ir/types.js';
import { SqliteArtifactsStore } from '../../store/sqlite/sqlite-artifacts-store.js';
import { openDb } from '../../store/sqlite/db.js';
import { registryMigrations } from '../../store/sqlite/migrations/registry.js';
import { doorsOf, listFlows, showFlow } from './flow-catalog.js';
import { frontMatterOf } from './flow-front-matter.js';

const BODY = '## Step: greet\n```ntd\n{"hi": true}\n```\n';
function compiled(frontMatter: string, flow = 'hello'): { ir: FlowIR; bytes: string; hash: string } {
  const r = compileFlow(`---\nflowdoc_version: "0.1"\nflow: ${flow}\ntenant: acme\n${frontMatter}---\n${BODY}`);
  assert.ok(r.ir && r.bytes && r.hash, JSON.stringify(r.diagnostics));
  return { ir: r.ir, bytes: r.bytes, hash: r.hash };
}

describe('doorsOf', () => {
  const cases: [string, string, string[]][] = [
    ['a plain flow answers /run and /enqueue', '', ['http', 'queue']],
    [
      'SOAP configuration adds its WSDL',
      'soap_operation: GetQuote\nsoap_namespace: urn:q\n',
      ['http', 'queue', 'soap'],
    ],
    ['inbound: grpc adds the gRPC door', 'inbound: grpc\ngrpc_method: a.B/C\n', ['http', 'queue', 'grpc']],
    ['a schedule adds cron', 'schedule: "0 0 6 * * *"\n', ['http', 'queue', 'cron']],
  ];
  for (const [name, fm, doors] of cases)
    it(name, () =>
      assert.deepEqual(
        doorsOf(compiled(fm).ir).map((d) => d.door),
        doors,
      ),
    );

  it('says where: routes, the method (or the default rule) and whether a schedule is usable', () => {
    const details = (fm: string) => doorsOf(compiled(fm).ir).map((d) => d.detail);
    assert.ok(details('').includes('POST /flows/acme/hello/enqueue'));
    assert.ok(details('inbound: grpc\ngrpc_method: a.B/C\n').some((d) => d.startsWith('a.B/C ')));
    assert.ok(details('inbound: grpc\n').some((d) => d.startsWith('the method named like the flow')));
    assert.ok(details('schedule: "* * *"\n').some((d) => d.startsWith('not scheduled: schedule "* * *" has 3 fields')));
  });
});

describe('frontMatterOf', () => {
  it("writes the compiled front matter back in the format's keys, defaults filled in", () => {
    const fm = frontMatterOf(
      compiled(
        'required_scope: orders:write\ndedup_key: ctx.input.id\ncorrelation_open: {key: ctx.input.id, deadline_secs: 60}\nconfig: [region]\n',
      ).ir,
    );
    assert.deepEqual(fm, {
      flowdoc_version: '0.1',
      flow: 'hello',
      tenant: 'acme',
      effects: [],
      required_scope: 'orders:write',
      queue_max_attempts: 3,
      queue_initial_delay_ms: 1000,
      queue_backoff_factor: 2,
      queue_max_delay_ms: 60000,
      config: ['region'],
      log_level: 'payload_trimmed',
      dedup_key: 'ctx.input.id',
      dedup_memoize_response: false,
      dedup_on_failure: 'rerun',
      correlation_open: { key: 'ctx.input.id', deadline_secs: 60 },
    });
  });
});

describe('listFlows and showFlow', () => {
  const registry = openDb(':memory:', registryMigrations);
  const artifacts = new SqliteArtifactsStore(registry);
  const publish = (flow: string, version: string, fm: string) => {
    const c = compiled(fm, flow);
    artifacts.publish({
      tenant: 'acme',
      name: flow,
      version,
      bytes: c.bytes,
      hash: c.hash,
      createdAt: '2026-01-31T08:00:00Z',
    });
  };
  publish('hello', '1', '');
  publish('hello', '2', 'schedule: "0 0 6 * * *"\n');
  publish('quote', '1', 'soap_operation: GetQuote\nsoap_namespace: urn:q\n');

  it('lists each latest version with its markers, and an unreadable artifact with its error', async () => {
    assert.deepEqual(
      (await listFlows(artifacts)).map((f) => [f.flow, f.version, f.soap, f.grpc, f.schedule]),
      [
        ['hello', '2', false, false, '0 0 6 * * *'],
        ['quote', '1', true, false, null],
      ],
    );
    assert.deepEqual(await listFlows(artifacts, 'other'), []);
    const broken = openDb(':memory:', registryMigrations);
    const repo = new SqliteArtifactsStore(broken);
    const c = compiled('');
    repo.publish({
      tenant: 'acme',
      name: 'hello',
      version: '1',
      bytes: c.bytes,
      hash: c.hash,
      createdAt: '2026-01-31T08:00:00Z',
    });
    broken.prepare('UPDATE artifacts SET bytes = ?').run(Buffer.from('{}'));
    assert.match((await listFlows(repo))[0]!.error ?? '', /is corrupt/);
  });

  it('shows every version and describes the latest unless told which', async () => {
    const latest = await showFlow(artifacts, 'acme', 'hello');
    assert.deepEqual(
      latest.versions.map((v) => [v.version, v.latest]),
      [
        ['1', false],
        ['2', true],
      ],
    );
    assert.equal(latest.shown.version, '2');
    assert.equal(latest.shown.front_matter.schedule, '0 0 6 * * *');
    const first = await showFlow(artifacts, 'acme', 'hello', '1');
    assert.deepEqual(
      first.shown.doors.map((d) => d.door),
      ['http', 'queue'],
    );
    await assert.rejects(() => showFlow(artifacts, 'acme', 'hello', '9'), /has no version "9"; its versions: 1, 2/);
    await assert.rejects(() => showFlow(artifacts, 'acme', 'nope'), /flow 'acme\/nope' is not deployed/);
    await assert.rejects(
      () => showFlow(artifacts, 'acme', 'Bad Name'),
      (err: { code?: string }) => err.code === 'SVC_ERR_INVALID_NAME',
    );
  });
});
