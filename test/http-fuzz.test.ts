/**
 * Property-based fuzzing of every HTTP route against the built `svc serve` (fast-check, raw sockets):
 * a sample of the run `npm run fuzz:http` makes at full size (test/fuzz/, docs/operations.md).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFuzzTarget, type FuzzTarget } from './fuzz/fuzz-target.js';
import { KNOWN_CASES } from './fuzz/known-cases.js';
import { formatReport, fuzzHttp } from './fuzz/http-fuzz.js';
import { violation } from './fuzz/http-oracle.js';

/** Random cases per `npm test`; the script runs 10,000 and more. */
const SAMPLE_RUNS = 400;
/** Fixed, so `npm test` is repeatable; SVC_FUZZ_SEED explores others. */
const SEED = Number(process.env.SVC_FUZZ_SEED ?? 4242);
/** How far the server's RSS may stay above its start after the run. Measured: 30-50 MiB (docs/operations.md). */
const RSS_MARGIN_BYTES = 150 * 1024 * 1024;

describe('the HTTP routes under fuzzed hostile requests (real server, raw sockets)', () => {
  let target: FuzzTarget;

  before(async () => {
    target = await startFuzzTarget();
  });
  after(async () => {
    await target?.close();
  });

  it('the oracle flags a 5xx outside the spec, a hang and a dropped connection (so the property can fail)', () => {
    const c = KNOWN_CASES[0]!;
    const answer = (status: number, body: string, headers: Record<string, string> = {}) => ({
      kind: 'answer' as const,
      status,
      headers,
      body: Buffer.from(body),
      complete: true,
      ms: 1,
    });
    assert.match(violation(c, answer(500, '{"ok":false,"error":"internal error"}')) ?? '', /status 500/);
    assert.match(violation(c, answer(503, '{"ok":false,"error":"server is shutting down"}')) ?? '', /status 503/);
    assert.match(violation(c, { kind: 'silent', ms: 15_000 }) ?? '', /hang/);
    assert.match(violation(c, { kind: 'closed', ms: 3 }) ?? '', /without an answer/);
    assert.match(violation(c, answer(400, '{}')) ?? '', /where the spec says 200/);
    assert.match(violation(c, { ...answer(200, '{"id":'), complete: false }) ?? '', /cut off/);
    // The on-purpose failure and a busy server are the spec's own.
    const boom = KNOWN_CASES.find((k) => k.target === '/flows/acme/boom/run')!;
    assert.equal(violation(boom, answer(500, '{"failed_on_purpose":true}')), undefined);
    assert.equal(
      violation(
        { ...c, expect: undefined },
        answer(503, '{"ok":false,"error":"server busy: too many flow executions in flight"}', { 'retry-after': '1' }),
      ),
      undefined,
    );
  });

  it(`${SAMPLE_RUNS} random requests and the known hostile cases: no 5xx outside the spec, no hang, no crash, /health throughout, memory back near its start`, async () => {
    const report = await fuzzHttp(target, { runs: SAMPLE_RUNS, seed: SEED, healthEvery: 20 });
    const summary = formatReport(report);
    assert.equal(report.failure, undefined, summary);
    assert.ok(report.cases >= SAMPLE_RUNS + KNOWN_CASES.length, summary);
    assert.ok(report.healthChecks >= Math.floor(SAMPLE_RUNS / 20), summary);
    assert.ok(report.rss.endBytes - report.rss.startBytes < RSS_MARGIN_BYTES, summary);
    // The sample reached past the gate: flows answered, and the on-purpose failure was told apart.
    assert.ok((report.statuses['200'] ?? 0) > SAMPLE_RUNS / 20, summary);
    assert.ok((report.specifiedServerErrors['flow failed on purpose'] ?? 0) >= 1, summary);
  });
});
