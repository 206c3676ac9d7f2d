/** Black-box: the periodic queue compaction of svc serve (queue_compaction_interval_secs = 1) on the files of queues/{tenant}/{flow}/. */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { statePaths } from '../src/common/paths.js';
import { enqueue, events, flowSource, OK_FLOW, tenantWithKey } from './helpers/queue-flows.js';
import { deployFlow, setSystemConfig } from './helpers/registry-setup.js';
import { waitFor } from './helpers/wait.js';
import { makeSandbox, onlyOn, startServer, svc, type ServerProcess } from './helpers/svc.js';

/** Dead-letters on the first attempt (an unset secret is the 502 class). */
const DEAD = flowSource(
  'dead',
  ['effects: [secret_read]', 'queue_max_attempts: 1'],
  '## Step: never_set_q\neffects: [secret_read]\n',
);
/** Fails once and then waits ten minutes for its retry: a pending retry that outlives the server. */
const WAITING = flowSource(
  'waiting',
  ['effects: [secret_read]', 'queue_max_attempts: 5', 'queue_initial_delay_ms: 600000', 'queue_max_delay_ms: 600000'],
  '## Step: never_set_q\neffects: [secret_read]\n',
);

// On --store an acknowledged message's row is deleted and ids come from queue_heads: there are no files to compact.
describe(
  'queue compaction of svc serve',
  { skip: onlyOn('sqlite', "the segment, consumer and dead-letter files of the state directory's queues") },
  () => {
    const sandbox = makeSandbox();
    const dir = (flow: string) => join(statePaths(sandbox.db).queuesDir, 'acme', flow);
    const file = (flow: string, name: string) => join(dir(flow), name);
    const text = (flow: string, name: string) => readFileSync(file(flow, name), 'latin1');
    let server: ServerProcess | undefined;
    let key = '';
    const send = (flow: string, body: string, correlationId?: string) =>
      enqueue(server!.url, flow, body, { key, correlationId });
    const deadLetters = (flow: string) =>
      JSON.parse(
        svc(sandbox, ['dlq', 'list', '--tenant', 'acme', '--flow', flow, '--json', '--db', sandbox.db]).stdout || '[]',
      ) as { id: number; payload: unknown }[];
    const discard = (flow: string, id: number) => {
      const r = svc(sandbox, [
        'dlq',
        'discard',
        '--tenant',
        'acme',
        '--flow',
        flow,
        '--id',
        String(id),
        '--db',
        sandbox.db,
      ]);
      assert.equal(r.code, 0, r.stderr);
    };

    before(async () => {
      key = tenantWithKey(sandbox);
      deployFlow(sandbox, OK_FLOW);
      deployFlow(sandbox, DEAD);
      deployFlow(sandbox, WAITING);
      setSystemConfig(sandbox, { queue_compaction_interval_secs: 1 });
      server = await startServer(sandbox);
    });
    after(async () => {
      await server?.stop();
      sandbox.cleanup();
    });

    it('empties the segment of a processed queue in place, and offsets start again at 0', async () => {
      const seg = file('ok', 'segment.log');
      assert.equal((await send('ok', '{"n": 1}', 'ok-1')).status, 202);
      // The segment's inode, read once the first record is in. Its size is not asserted before the
      // pass: one runs every second here and may empty it before the processed rows are in the log
      // (batched), which failed this test once on a loaded machine.
      const inode = statSync(seg).ino;
      for (const n of [2, 3]) assert.equal((await send('ok', `{"n": ${n}}`, `ok-${n}`)).status, 202);
      await waitFor('three processed', () => events(sandbox, "event = 'queue_processed' AND flow = 'ok'").length === 3);
      await waitFor('the segment emptied', () => statSync(seg).size === 0, 10_000);
      assert.equal(statSync(seg).ino, inode, 'truncated in place, not replaced');
      assert.ok(existsSync(file('ok', 'counter.json')));
      const next = JSON.parse((await send('ok', '{"n": 4}', 'ok-4')).text) as { offset: number };
      assert.equal(next.offset, 0);
      await waitFor(
        'the fourth processed',
        () => events(sandbox, "event = 'queue_processed' AND correlation_id = 'ok-4'").length === 1,
      );
    });

    it('rewrites dlq.log without handled entries and keeps the pending ones', async () => {
      await send('dead', '{"order": "keep-me"}', 'dead-keep');
      await send('dead', '{"order": "drop-me"}', 'dead-drop');
      await waitFor('two dead letters', () => deadLetters('dead').length === 2);
      const drop = deadLetters('dead').find((d) => JSON.stringify(d.payload).includes('drop-me'))!;
      assert.match(text('dead', 'dlq.log'), /drop-me/);
      discard('dead', drop.id);
      await waitFor('dlq.log without the discarded entry', () => !/drop-me/.test(text('dead', 'dlq.log')), 10_000);
      assert.match(text('dead', 'dlq.log'), /keep-me/);
      assert.doesNotMatch(text('dead', 'dlq.log'), /"handled"/);
      assert.deepEqual(
        deadLetters('dead').map((d) => d.payload),
        [{ order: 'keep-me' }],
      );
    });

    it("after a restart (no worker runs): deletes an empty queue's files but its counter, keeps queues with a pending retry or dead letter", async () => {
      await send('waiting', '{"w": 1}', 'wait-1');
      await waitFor(
        'the first failed attempt',
        () => events(sandbox, "event = 'queue_failed' AND flow = 'waiting'").length === 1,
      );
      const lastId = Math.max(
        ...events(sandbox, "event = 'queue_enqueued' AND flow = 'ok'").map(
          (r) => (JSON.parse(r.payload!) as { id: number }).id,
        ),
      );
      assert.equal(await server!.stop(), 0);
      server = await startServer(sandbox);

      await waitFor(
        'ok/ files removed',
        () => !existsSync(file('ok', 'segment.log')) && !existsSync(file('ok', 'consumer.log')),
        10_000,
      );
      assert.ok(existsSync(file('ok', 'counter.json')), 'the id counter stays');
      // Two more passes: the queue with a pending dead letter and the one with a pending retry stay.
      await new Promise((r) => setTimeout(r, 2200));
      assert.ok(
        existsSync(file('dead', 'dlq.log')) && existsSync(file('dead', 'segment.log')),
        'an unhandled dead letter keeps the queue',
      );
      assert.match(text('waiting', 'consumer.log'), /"retry"/);
      assert.ok(existsSync(file('waiting', 'segment.log')), 'a pending retry keeps the queue');

      discard('dead', deadLetters('dead')[0]!.id);
      await waitFor(
        'dead/ files removed',
        () => !existsSync(file('dead', 'dlq.log')) && !existsSync(file('dead', 'segment.log')),
        10_000,
      );
      assert.ok(existsSync(file('dead', 'counter.json')));
      assert.ok(existsSync(file('waiting', 'consumer.log')), 'the pending retry is still kept');

      // Ids are never reissued after the files are gone.
      assert.equal((await send('ok', '{"n": 5}', 'ok-5')).status, 202);
      const row = await waitFor(
        'the new enqueue row',
        () => events(sandbox, "event = 'queue_enqueued' AND correlation_id = 'ok-5'")[0],
      );
      assert.ok((JSON.parse(row.payload!) as { id: number }).id > lastId);
    });
  },
);
