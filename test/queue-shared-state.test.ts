import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueue, events, flowSource, tenantWithKey } from './helpers/queue-flows.js';
import { deployFlow, setSystemConfig } from './helpers/registry-setup.js';
import { waitFor } from './helpers/wait.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

const echo = (name: string) => flowSource(name, [], '## Step: answer\n```ntd\n{"n": "{{ ctx.input.n }}"}\n```\n');
const publishTo = (name: string, target: string) =>
  flowSource(name, ['effects: [queue_publish]'], `## Step: hand-off\neffects: [queue_publish]\nqueue: ${target}\n`);

describe('two svc serve processes on one state directory', () => {
  const sandbox = makeSandbox();
  let a: ServerProcess;
  let b: ServerProcess;
  let key = '';

  before(async () => {
    key = tenantWithKey(sandbox);
    for (const f of ['alpha', 'beta', 'gamma']) deployFlow(sandbox, echo(f));
    deployFlow(sandbox, publishTo('to-beta', 'beta'));
    deployFlow(sandbox, publishTo('to-gamma', 'gamma'));
    // One worker per process: queues take turns at each process's one slot.
    setSystemConfig(sandbox, { max_queue_workers: 1 });
    [a, b] = await Promise.all([startServer(sandbox), startServer(sandbox)]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    sandbox.cleanup();
  });

  const processedOnce = (prefix: string, n: number) =>
    waitFor(
      `${n} processed ${prefix} messages`,
      () => {
        const rows = events(sandbox, "event = 'queue_processed' AND correlation_id LIKE ?", [`${prefix}%`]);
        return rows.length >= n ? rows : undefined;
      },
      30_000,
    );

  it('shares the work: each process runs the worker of the queue it saw first, and no message is processed twice', async () => {
    assert.equal((await enqueue(a.url, 'alpha', '{"n": 0}', { key, correlationId: 'first-alpha' })).status, 202);
    await processedOnce('first-alpha', 1);
    assert.equal((await enqueue(b.url, 'beta', '{"n": 0}', { key, correlationId: 'first-beta' })).status, 202);
    await processedOnce('first-beta', 1);
    const sends: Promise<{ status: number }>[] = [];
    for (let i = 0; i < 40; i++) {
      const server = i % 2 === 0 ? a : b;
      const flow = i % 4 < 2 ? 'alpha' : 'beta';
      sends.push(enqueue(server.url, flow, JSON.stringify({ n: i }), { key, correlationId: `shared-${i}` }));
    }
    assert.ok((await Promise.all(sends)).every((r) => r.status === 202));
    await processedOnce('shared-', 40);
    await new Promise((r) => setTimeout(r, 600)); // a duplicate would show up within a poll interval
    const rows = events(sandbox, "event = 'queue_processed' AND correlation_id LIKE 'shared-%'");
    const seen = new Map<string, number>();
    for (const r of rows) seen.set(r.correlation_id!, (seen.get(r.correlation_id!) ?? 0) + 1);
    assert.equal(seen.size, 40);
    assert.deepEqual(
      [...seen.values()].filter((n) => n !== 1),
      [],
    );
  });

  it("queue_publish succeeds when another process runs the target queue's worker", async () => {
    const res = await fetch(`${a.url}/flows/acme/to-beta/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-correlation-id': 'pub-beta' },
      body: '{"n": 1}',
    });
    assert.equal(res.status, 200, await res.text());
    await processedOnce('pub-beta', 1);
  });

  it('past max_queue_workers a queue waits for a slot and is served once one is given back; queue_publish to it succeeds', async () => {
    // Each process holds one slot, by now given to alpha or beta; a's worker has nothing left to
    // deliver, so it gives its slot back to gamma at once.
    assert.equal((await enqueue(a.url, 'gamma', '{"n": 1}', { key, correlationId: 'gamma-1' })).status, 202);
    const res = await fetch(`${a.url}/flows/acme/to-gamma/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-correlation-id': 'pub-gamma' },
      body: '{"n": 2}',
    });
    assert.equal(res.status, 200, await res.text());
    await processedOnce('gamma-1', 1);
    await processedOnce('pub-gamma', 1);
    // And the queues that gave their slot back are served again when they get work.
    assert.equal((await enqueue(b.url, 'alpha', '{"n": 3}', { key, correlationId: 'alpha-again' })).status, 202);
    assert.equal((await enqueue(a.url, 'beta', '{"n": 4}', { key, correlationId: 'beta-again' })).status, 202);
    await processedOnce('alpha-again', 1);
    await processedOnce('beta-again', 1);
  });
});
