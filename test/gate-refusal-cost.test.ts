/**
 * Refusals cost a bounded number of records whatever their rate (issue 20, defect 4): a caller
 * refused again and again gets its first few refusals of a kind recorded one by one in each
 * 10 s window and the rest folded into one summary row (and, for a key holder, one audit entry)
 * carrying the count; nothing is lost from the count and the audit chain still verifies.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { auditRows, logRows, type LogRow } from './helpers/log-reads.js';
import { createKey, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';

const REFUSALS = 300;

describe('a refused caller repeating itself', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let limited = '';
  let unscoped = '';

  before(async () => {
    createTenant(sandbox, 'acme');
    deployFlow(
      sandbox,
      flow('acme', 'guarded', 'required_scope: orders', '## Step: answer\n```ntd\n{"ok": true}\n```\n'),
    );
    limited = createKey(sandbox, 'acme', { scopes: 'orders', rateLimit: 1 });
    unscoped = createKey(sandbox, 'acme', { scopes: 'billing' });
    server = await startServer(sandbox);
  });
  after(async () => {
    await server.stop();
    sandbox.cleanup();
  });

  const send = async (authorization: string): Promise<number[]> => {
    const statuses: number[] = [];
    for (let i = 0; i < REFUSALS; i++) {
      const res = await fetch(`${server.url}/flows/acme/guarded/run`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json', 'x-correlation-id': `c-${i}` },
        body: '{}',
      });
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    return statuses;
  };

  /** Refusals a set of rows stands for: one per row of its own, `repeats` per summary. */
  const represented = (rows: { payload: string | null }[]): number =>
    rows.reduce(
      (n, r) => n + ((r.payload ? (JSON.parse(r.payload) as { repeats?: number }).repeats : undefined) ?? 1),
      0,
    );

  it('records every refusal, most of them folded into counted summaries, and the chain verifies', async () => {
    const unknown = await send(`Bearer svk_${'0'.repeat(32)}`);
    const overLimit = await send(`Bearer ${limited}`);
    const forbidden = await send(`Bearer ${unscoped}`);
    assert.deepEqual(new Set(unknown), new Set([401]));
    assert.deepEqual(new Set(forbidden), new Set([403]));
    const refused429 = overLimit.filter((s) => s === 429).length;
    // The bucket refills one token a second: a slow (loaded) machine lets a few more through.
    assert.ok(refused429 >= REFUSALS / 2, `${refused429} of ${REFUSALS} answered 429`);
    // A clean stop closes the last window: its summaries are written before the stores close.
    assert.equal(await server.stop(), 0);

    const denied = logRows(sandbox, { event: 'access_denied' });
    const byStatus = (status: number): LogRow[] => denied.filter((r) => r.http_status === status);
    for (const [status, sent] of [
      [401, REFUSALS],
      [429, refused429],
      [403, REFUSALS],
    ] as const) {
      const rows = byStatus(status);
      assert.equal(represented(rows), sent, `the ${status} rows stand for all ${sent} refusals`);
      // The run above takes well under a minute: at most a few windows, each with 5 rows and a summary.
      assert.ok(rows.length <= 30, `${rows.length} log rows for ${sent} refusals answered ${status}`);
      const summary = rows.find((r) => r.payload?.includes('repeats'));
      assert.ok(summary, `a summary row for ${status}`);
      const fold = JSON.parse(summary.payload!) as { repeats: number; first_at: string; last_at: string };
      assert.ok(fold.repeats > 0 && fold.first_at <= fold.last_at, summary.payload!);
      assert.equal(summary.tenant, 'acme');
      assert.equal(summary.flow, 'guarded');
      assert.equal(summary.correlation_id, null);
    }
    // The unknown key has no subject: no audit entry. The key holders' refusals are audited the same way.
    const entries = auditRows(sandbox, 'acme').filter((e) => e.event_type === 'access.denied');
    const auditedStatus = (status: number) =>
      entries.filter((e) => (JSON.parse(e.payload) as { status: number }).status === status);
    assert.equal(represented(auditedStatus(429)), refused429);
    assert.equal(represented(auditedStatus(403)), REFUSALS);
    assert.equal(auditedStatus(401).length, 0);
    assert.ok(entries.length <= 60, `${entries.length} audit entries for ${refused429 + REFUSALS} audited refusals`);
    const verify = svc(sandbox, ['audit', '--tenant', 'acme', '--verify', '--db', sandbox.db]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  });

  it('a keyless client varying the flow and tenant names costs a few rows, not a row per name (issue 33, item 5)', async () => {
    server = await startServer(sandbox);
    for (let i = 0; i < REFUSALS; i++) {
      const res = await fetch(`${server.url}/flows/t${i % 7}/flow-${i}/run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      await res.arrayBuffer();
      assert.equal(res.status, 401);
    }
    // A clean stop closes the last window.
    assert.equal(await server.stop(), 0);
    const all = logRows(sandbox, { event: 'access_denied' });
    const mine = all.filter((r) => r.reason === 'missing Authorization header' || r.payload?.includes('variants'));
    assert.equal(represented(mine), REFUSALS, 'every refusal is recorded');
    assert.ok(mine.length <= 12, `${mine.length} log rows for ${REFUSALS} refusals, each to a new flow name`);
    const summary = mine.find((r) => r.payload?.includes('variants'));
    assert.ok(summary, 'a summary of the varied refusals');
    assert.equal(summary.tenant, null);
    assert.equal(summary.flow, null);
    assert.ok(
      Number(String((JSON.parse(summary.payload!) as { variants: number | string }).variants).replace('+', '')) > 1,
    );
  });
});
