import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueue, events, flowSource, tenantWithKey } from './helpers/queue-flows.js';
import { deployFlow } from './helpers/registry-setup.js';
import { waitFor } from './helpers/wait.js';
import { makeSandbox, startServer, svc } from './helpers/svc.js';

/**
 * The flow succeeds only where SVC_SECRET_GATE_OPEN is set. The first server runs without it, so
 * nothing it does can produce a `queue_processed` row: every attempt there fails and is
 * rescheduled. That matters because the event log is batched and a kill -9 may lose its last
 * rows: had the first server processed a message, its checkpoint could be durable while its row
 * was lost, and the test could not tell a lost message from a lost row. So every
 * `queue_processed` row is written by the second server, which is stopped cleanly (flushed), and
 * a 202 whose message never produced one is a lost message.
 */
const CRASHY = flowSource(
  'crashy',
  ['effects: [secret_read]', 'queue_max_attempts: 50', 'queue_initial_delay_ms: 300', 'queue_backoff_factor: 1.0', 'queue_max_delay_ms: 300'],
  '## Step: gate_open\neffects: [secret_read]\n\n## Step: answer\n```ntd\n{"n": "{{ ctx.input.n }}"}\n```\n',
);

describe('a kill -9 in the middle of an /enqueue storm', () => {
  const sandbox = makeSandbox();
  let key = '';

  before(() => {
    key = tenantWithKey(sandbox);
    deployFlow(sandbox, CRASHY);
  });
  after(() => sandbox.cleanup());

  it('loses no message that got a 202: after a restart every one is processed at least once', async () => {
    const first = await startServer(sandbox);
    const acked: string[] = [];
    let stop = false;
    const client = async (c: number): Promise<void> => {
      for (let i = 0; !stop; i++) {
        const cid = `storm-${c}-${i}`;
        try {
          const r = await enqueue(first.url, 'crashy', JSON.stringify({ n: i }), { key, correlationId: cid });
          if (r.status === 202) acked.push(cid);
        } catch {
          return; // the server is gone
        }
      }
    };
    const clients = Array.from({ length: 16 }, (_, c) => client(c));
    await waitFor('some acknowledged messages', () => acked.length >= 200, 20_000);
    await first.kill9();
    stop = true;
    await Promise.all(clients);
    assert.ok(acked.length >= 200);

    const second = await startServer(sandbox, [], { SVC_SECRET_GATE_OPEN: 'yes' });
    try {
      // Workers start on the first submission after a restart.
      assert.equal((await enqueue(second.url, 'crashy', '{"n": -1}', { key, correlationId: 'starter' })).status, 202);
      const want = new Set([...acked, 'starter']);
      await waitFor(`${want.size} processed messages`, () => {
        const done = new Set(events(sandbox, "event = 'queue_processed' AND flow = 'crashy'").map((r) => r.correlation_id));
        return [...want].every((c) => done.has(c));
      }, 60_000);
    } finally {
      await second.stop();
    }
    assert.equal(svc(sandbox, ['dlq', 'list', '--db', sandbox.db]).stdout, 'DLQ is empty.\n');
  });
});
