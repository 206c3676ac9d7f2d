/**
 * One trial of `kill -9` during an /enqueue storm, shared by test/queue-crash.test.ts (5 trials in
 * `npm test`) and `npm run fault:enqueue-kill` (test/faults/enqueue-kill.ts, 20 by default): start
 * the server, storm it with concurrent clients, kill it at a random moment after some 202s,
 * restart, and count which acknowledged messages were delivered, and how often.
 */
import { DELIVER_STEP, startDeliveryBackend, type DeliveryBackend } from './delivery-backend.js';
import { enqueue, flowSource, tenantWithKey } from './queue-flows.js';
import { deployFlow } from './registry-setup.js';
import { storeRows } from './store-sql.js';
import { startServer, svc, type Sandbox } from './svc.js';
import { waitFor } from './wait.js';

/**
 * Each delivery calls the test's backend (an observer outside the service's storage, which the
 * kill does not touch), and the backend refuses the first call of some messages: so the kill lands
 * among segment appends, deliveries, retry-schedule writes and checkpoint writes alike. A message
 * the killed server ran but had not checkpointed yet is delivered again after the restart (at
 * least once): the backend counts that as a duplicate. An acknowledged message the backend never
 * sees is lost.
 */
const CRASHY = flowSource(
  'crashy',
  [
    'effects: [http_egress]',
    'queue_max_attempts: 50',
    'queue_initial_delay_ms: 50',
    'queue_backoff_factor: 1.0',
    'queue_max_delay_ms: 50',
  ],
  DELIVER_STEP,
);

export interface KillTrialOptions {
  /** Concurrent /enqueue clients. @default 16 */
  clients?: number;
  /** The kill comes once at least this many 202s were received... @default 50 */
  minAcksBeforeKill?: number;
  /** ...plus a random number below this. @default 400 */
  randomAcksBeforeKill?: number;
  /** Longest the restarted server may take to process every acknowledged message. Milliseconds. @default 60000 */
  processTimeoutMs?: number;
}

export interface KillTrialResult {
  readonly trial: number;
  /** 202s received before the kill. */
  readonly acked: number;
  /** The 202 count the kill waited for (the random moment). */
  readonly killAfterAcks: number;
  /** Messages of the trial delivered (answered 200 by the backend) before the kill. */
  readonly deliveredAtKill: number;
  /** Answers other than 202 before the kill (the spec has none for a healthy disk). */
  readonly otherAnswers: readonly number[];
  /** Acknowledged correlation ids never delivered after the restart. */
  readonly lost: readonly string[];
  /** Deliveries beyond one per message (delivery is at least once: a kill between a run and its checkpoint). */
  readonly duplicates: number;
  /** Acknowledged correlation ids without their `queue.message.enqueued` audit entry. */
  readonly unaudited: readonly string[];
  /** Acknowledged correlation ids with more than one `queue.message.enqueued` entry (one per acknowledgement). */
  readonly auditedTwice: readonly string[];
  /** Delivered correlation ids without a `queue.message.processed` audit entry. */
  readonly deliveriesUnaudited: readonly string[];
  readonly dlqEmpty: boolean;
  readonly durationMs: number;
}

/** What the trials of one sandbox share: the key and the backend. */
export interface KillTrialSetup {
  readonly key: string;
  readonly backend: DeliveryBackend;
}

/** Tenant acme, a key, the flow and the backend, once per sandbox; trials then share them (each trial's ids are its own). */
export async function prepareKillTrials(sandbox: Sandbox): Promise<KillTrialSetup> {
  const key = tenantWithKey(sandbox);
  deployFlow(sandbox, CRASHY);
  // One message in eight is retried: enough retry-schedule writes for the kill to land among, without
  // a synced retry record per message slowing every trial down.
  return { key, backend: await startDeliveryBackend({ failFirstCall: (id) => Number(id.split('-').pop()) % 8 === 0 }) };
}

/** The kill moments' generator: a run is replayed with its seed. */
export { seededRandom } from './seeded-random.js';

export async function runKillTrial(
  sandbox: Sandbox,
  setup: KillTrialSetup,
  trial: number,
  random: () => number,
  opts: KillTrialOptions = {},
): Promise<KillTrialResult> {
  const started = Date.now();
  const { key, backend } = setup;
  const env = { BACKEND_URL: backend.url };
  const killAfterAcks = (opts.minAcksBeforeKill ?? 50) + Math.floor(random() * (opts.randomAcksBeforeKill ?? 400));
  const prefix = `t${trial}.`;
  const deliveredOfTrial = () => [...backend.delivered].filter(([cid]) => cid.startsWith(prefix));
  const first = await startServer(sandbox, [], env);
  const acked: string[] = [];
  const otherAnswers: number[] = [];
  let stop = false;
  const client = async (c: number): Promise<void> => {
    for (let i = 0; !stop; i++) {
      const cid = `${prefix}${c}-${i}`;
      try {
        const r = await enqueue(first.url, 'crashy', JSON.stringify({ n: i }), { key, correlationId: cid });
        if (r.status === 202) acked.push(cid);
        else otherAnswers.push(r.status);
      } catch {
        return; // the server is gone
      }
    }
  };
  const clients = Array.from({ length: opts.clients ?? 16 }, (_, c) => client(c));
  try {
    await waitFor(
      `${killAfterAcks} acknowledged messages`,
      () => acked.length >= killAfterAcks || first.child.exitCode !== null,
      30_000,
      1,
    );
  } finally {
    await first.kill9();
    stop = true;
    await Promise.all(clients);
  }
  const ackedAtKill = acked.length;
  const deliveredAtKill = deliveredOfTrial().length;

  const second = await startServer(sandbox, [], env);
  const want = new Set(acked);
  try {
    // The backlog resumes at start by itself (queue-resume.test.ts); a new message after the restart
    // is delivered as well.
    const starter = `${prefix}starter`;
    const r = await enqueue(second.url, 'crashy', '{"n": -1}', { key, correlationId: starter });
    if (r.status !== 202) throw new Error(`the restarted server answered ${r.status} to the starter`);
    want.add(starter);
    // A timeout is not thrown here: the count below names what is missing.
    await waitFor(
      `${want.size} delivered messages`,
      () => [...want].every((c) => backend.delivered.has(c)),
      opts.processTimeoutMs ?? 60_000,
      50,
    ).catch(() => undefined);
  } finally {
    await second.stop();
  }
  const correlationIds = (eventType: string) =>
    storeRows<{ correlation_id: string }>(
      sandbox,
      'audit',
      'SELECT correlation_id FROM audit_entries WHERE tenant = ? AND event_type = ?',
      'acme',
      eventType,
    ).map((r) => r.correlation_id);
  const enqueuedList = correlationIds('queue.message.enqueued');
  const enqueued = new Set(enqueuedList);
  const processed = new Set(correlationIds('queue.message.processed'));
  return {
    trial,
    acked: ackedAtKill,
    unaudited: [...want].filter((c) => !enqueued.has(c)),
    auditedTwice: [...new Set(enqueuedList.filter((c, i) => want.has(c) && enqueuedList.indexOf(c) !== i))],
    deliveriesUnaudited: deliveredOfTrial()
      .map(([c]) => c)
      .filter((c) => !processed.has(c)),
    killAfterAcks,
    deliveredAtKill,
    otherAnswers,
    lost: [...want].filter((c) => !backend.delivered.has(c)),
    duplicates: deliveredOfTrial().reduce((sum, [, n]) => sum + n - 1, 0),
    dlqEmpty: svc(sandbox, ['dlq', 'list', '--db', sandbox.db]).stdout === 'DLQ is empty.\n',
    durationMs: Date.now() - started,
  };
}
