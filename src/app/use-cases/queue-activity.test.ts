// The Queues page's series: per minute of the last hour, the sampled backlog and dead letters (null
// where no sample was taken) and the deliveries run without failing, from the rollups.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EventLogStore, QueueSample, RollupQuery, RollupRow } from '../../store/contracts/index.js';
import { queueActivity, queueChart } from './queue-activity.js';

const NOW = Date.UTC(2026, 10, 28, 12, 30, 20);
const MINUTE = Math.floor(NOW / 60_000);

function store(samples: QueueSample[], rows: RollupRow[]): EventLogStore {
  const reads: Pick<EventLogStore, 'queueSamples' | 'rollupCounts'> = {
    queueSamples: (q) => samples.filter((s) => s.minute >= q.fromMinute && s.minute < q.toMinute),
    rollupCounts: (q: RollupQuery) =>
      rows.filter((r) => r.minute >= q.fromMinute && r.minute < q.toMinute && r.step === ''),
  };
  return reads as EventLogStore;
}

const row = (minute: number, flow: string, door: string, count: number, failures: number): RollupRow => ({
  minute,
  tenant: 'acme',
  flow,
  door,
  step: '',
  count,
  failures,
  sumMs: 1,
  buckets: new Array<number>(15).fill(0),
});

test('backlog and dead letters where sampled, processed from the queue door only, one value per minute', async () => {
  const sample = (minute: number, backlog: number, dead: number): QueueSample => ({
    minute,
    tenant: 'acme',
    flow: 'orders',
    backlog,
    retries: 0,
    processed: 0,
    dead,
  });
  const [series, ...rest] = await queueActivity(
    store(
      [sample(MINUTE - 2, 4, 0), sample(MINUTE, 1, 1), sample(MINUTE - 90, 9, 9)],
      [
        row(MINUTE - 2, 'orders', 'queue', 5, 2),
        row(MINUTE, 'orders', 'queue', 3, 0),
        row(MINUTE, 'orders', 'http', 7, 0),
      ],
    ),
    {},
    NOW,
  );
  assert.equal(rest.length, 0, 'a flow run only over /run has no queue series');
  assert.equal(series!.minutes.length, 60);
  assert.equal(series!.minutes.at(-1), MINUTE);
  assert.deepEqual(series!.backlog.slice(-3), [4, null, 1]);
  assert.deepEqual(series!.dead.slice(-3), [0, null, 1]);
  assert.deepEqual(series!.processed.slice(-3), [3, 0, 3]);
  assert.equal(series!.backlog.filter((v) => v !== null).length, 2, 'a sample older than the hour is not drawn');
  assert.match(queueChart(series!), /data-series="processed" data-values="(0,){57}3,0,3"/);
});
