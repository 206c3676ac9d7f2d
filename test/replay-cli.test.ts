/**
 * `svc replay` and `svc deploy --replay-since` (issue 38) through the built CLI: deliveries
 * recorded with tracing on against a loopback backend (each with a card number the log masks),
 * replayed against the same file (all the same), a candidate that changes the answer's shape
 * (differs, with paths and no values), one that adds a call out (not replayable, naming the
 * step), one that sends the masked card number out (not replayable, naming it) and one that calls
 * a deployed flow (resolved). A deploy that replays a difference publishes nothing; accepted, it
 * publishes and audits the counts. The backend gets no request during any replay.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTenant, flow } from './helpers/registry-setup.js';
import { storeRows } from './helpers/store-sql.js';
import {
  CARD,
  QUOTE_ANSWER,
  quoteFlow,
  recordQuotes,
  startPriceBackend,
  writeHome,
  type PriceBackend,
} from './helpers/quote-recording.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';

describe('svc replay', () => {
  const sb = makeSandbox();
  let backend: PriceBackend;
  let server: ServerProcess;
  const text = (answer: string, extra = '') => quoteFlow(backend.url, answer, extra);
  const ORIGINAL = QUOTE_ANSWER;
  const write = (name: string, body: string) => writeHome(sb, name, body);
  const calls = () => backend.calls();
  const replay = (candidate: string, ...more: string[]) =>
    svc(sb, ['replay', '--tenant', 'acme', '--flow', 'quote', '--candidate', candidate, ...more, '--db', sb.db]);

  before(async () => {
    backend = await startPriceBackend();
    createTenant(sb, 'acme');
    assert.equal(svc(sb, ['deploy', write('quote.flow.md', text(ORIGINAL)), '-v', '1', '--db', sb.db]).code, 0);
    // Hands on what it is given: a candidate calling it answers as before, through one more flow.
    const helper = flow(
      'acme',
      'wrap',
      '',
      '## Step: wrap\n```validate\nhas(ctx.input.id) | id is required | syntactic\n```',
    );
    assert.equal(svc(sb, ['deploy', write('wrap.flow.md', helper), '-v', '1', '--db', sb.db]).code, 0);
    assert.equal(svc(sb, ['trace', 'enable', '--tenant', 'acme', '--flow', 'quote', '--db', sb.db]).code, 0);
    server = await startServer(sb, ['--no-auth']);
    await recordQuotes(sb, server.url, ['r-1', 'r-2', 'r-3']);
    assert.equal(calls(), 3);
  });
  after(async () => {
    await server?.stop();
    await backend?.close();
    sb.cleanup();
  });

  it('finds every delivery the same against the deployed file, calling no backend', () => {
    const r = replay(join(sb.home, 'quote.flow.md'));
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(r.stdout, 'r-1  same\nr-2  same\nr-3  same\n3 deliveries: 3 same, 0 differ, 0 not replayable\n');
    assert.equal(calls(), 3);
  });

  it('names the differing paths of a changed answer, and no payload value; exit 1', () => {
    const r = replay(write('changed.flow.md', text('{"id": "{{ ctx.input.id }}", "total": {{ ctx.input.price }}}')));
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^r-1 {2}differs: body\.price, body\.total$/m);
    assert.match(r.stdout, /3 deliveries: 0 same, 3 differ, 0 not replayable/);
    assert.doesNotMatch(r.stdout + r.stderr, /12\.5/);
    assert.equal(calls(), 3);
  });

  it("names a header the candidate adds, against the deployed version's replay (tracing records no headers)", () => {
    const header = text(ORIGINAL).replace(
      '## Step: answer\n',
      '## Step: answer\nresponse_header_x_quote: "{{ ctx.input.id }}"\n',
    );
    const r = replay(write('header.flow.md', header), '--last', '1');
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.equal(r.stdout.split('\n')[0], 'r-3  differs: headers.x-quote');
    assert.equal(calls(), 3);
  });

  it('calls a delivery not replayable when the candidate calls out beyond the recording; --last and --correlation-id pick deliveries', () => {
    const extra = '\n## Step: audit\neffects: [http_egress]\nendpoint: http://127.0.0.1:9/audit\n';
    const r = replay(write('more.flow.md', text(ORIGINAL, extra)), '--last', '1');
    assert.equal(
      r.stdout.split('\n')[0],
      "r-3  not replayable: the candidate calls out at step 'audit', where the recording has no exchange",
    );
    assert.match(r.stdout, /^1 deliveries: 0 same, 0 differ, 1 not replayable$/m);
    // Nothing compared vouches for nothing: a gate must not pass on it.
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no delivery could be compared/);
    const one = replay(join(sb.home, 'quote.flow.md'), '--correlation-id', 'r-2', '--json');
    assert.equal(one.code, 0);
    assert.deepEqual(JSON.parse(one.stdout.split('\n')[0]!), { correlation_id: 'r-2', kind: 'same' });
    assert.equal(calls(), 3);
  });

  it('calls a delivery not replayable when the candidate needs a value the log masked, and prints none', () => {
    const sends = text(ORIGINAL).replace('/price/{{ ctx.input.id }}', '/price/{{ ctx.input.card_number }}');
    const r = replay(write('card.flow.md', sends), '--last', '1');
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.equal(
      r.stdout.split('\n')[0],
      'r-3  not replayable: the candidate needs a value the log masked (input.card_number)',
    );
    assert.doesNotMatch(r.stdout + r.stderr, new RegExp(CARD));
    assert.equal(calls(), 3);
  });

  it("resolves a candidate's call_flow to the tenant's deployed flow", () => {
    const calling = text(ORIGINAL, '').replace(
      '## Step: answer',
      '## Step: around\ncall_flow: wrap\n\n## Step: answer',
    );
    const r = replay(write('calling.flow.md', calling), '--last', '1');
    assert.match(r.stdout, /^r-3 {2}differs: steps$/m, r.stdout + r.stderr);
    assert.equal(calls(), 3);
  });

  it('deploy --replay-since publishes nothing when a delivery differs; accepted, it publishes and audits the counts', () => {
    const deployed = () =>
      storeRows<{ payload: string }>(
        sb,
        'audit',
        "SELECT payload FROM audit_entries WHERE tenant = 'acme' AND event_type = 'flow.deployed' ORDER BY seq",
      ).map((row) => JSON.parse(row.payload) as { flow: string; version: string; replay?: Record<string, unknown> });
    const before = deployed().length;
    const changed = join(sb.home, 'changed.flow.md');
    const refused = svc(sb, ['deploy', changed, '-v', '2', '--replay-since', '1h', '--db', sb.db]);
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.match(refused.stdout, /^replay of acme\/quote:$/m);
    assert.match(refused.stdout, /^ {2}r-1 {2}differs: body\.price, body\.total$/m);
    assert.match(refused.stdout, /^ {2}3 deliveries: 0 same, 3 differ, 0 not replayable$/m);
    assert.match(refused.stderr, /refused: replay found deliveries that differ \(acme\/quote\); nothing was published/);
    assert.doesNotMatch(refused.stdout + refused.stderr, new RegExp(`12\\.5|${CARD}`));
    const show = () => svc(sb, ['flows', 'show', '--tenant', 'acme', '--flow', 'quote', '--json', '--db', sb.db]);
    assert.match(show().stdout, /"version": "1"/);
    assert.equal(deployed().length, before);

    const accepted = svc(sb, [
      'deploy',
      changed,
      '-v',
      '2',
      '--replay-since',
      '1h',
      '--accept-differences',
      '--db',
      sb.db,
    ]);
    assert.equal(accepted.code, 0, accepted.stdout + accepted.stderr);
    assert.match(show().stdout, /"version": "2"/);
    const entry = deployed().at(-1)!;
    assert.equal(entry.version, '2');
    assert.equal(entry.flow, 'quote');
    assert.deepEqual(
      { ...entry.replay, since: undefined },
      { since: undefined, deliveries: 3, same: 0, differs: 3, not_replayable: 0, accepted_differences: true },
    );
    // A flow with no traced delivery in the window replays none and is published, saying so.
    const quiet = svc(sb, ['deploy', join(sb.home, 'wrap.flow.md'), '-v', '2', '--replay-since', '1h', '--db', sb.db]);
    assert.equal(quiet.code, 0, quiet.stdout + quiet.stderr);
    assert.match(
      quiet.stdout,
      /^replay of acme\/wrap:\n {2}0 deliveries: 0 same, 0 differ, 0 not replayable\ndeployed\n/,
    );
    assert.equal(calls(), 3);
  });

  it('deploy refuses --accept-differences and --ignore-volatile without --replay-since, and a --replay-since it cannot read', () => {
    const file = join(sb.home, 'quote.flow.md');
    for (const [args, message] of [
      [['--accept-differences'], /--accept-differences only applies with --replay-since/],
      [['--ignore-volatile'], /--ignore-volatile only applies with --replay-since/],
      [['--replay-since', 'yesterday'], /--replay-since: /],
    ] as const) {
      const r = svc(sb, ['deploy', file, '-v', '9', ...args, '--db', sb.db]);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.match(r.stderr, message);
    }
    assert.doesNotMatch(
      svc(sb, ['flows', 'show', '--tenant', 'acme', '--flow', 'quote', '--json', '--db', sb.db]).stdout,
      /"version": "9"/,
    );
  });
});
