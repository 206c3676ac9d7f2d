/** Black-box: a scheduler holder paused (SIGSTOP) past its lease is taken over, and once resumed (SIGCONT) it stands down: each tick runs once. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { logRows } from './helpers/log-reads.js';
import { createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { schedulerHolderPid } from './helpers/lock-holders.js';
import { makeSandbox, startServer, type Sandbox, type ServerProcess } from './helpers/svc.js';
import { sleep, waitFor } from './helpers/wait.js';

let sb: Sandbox;
let a: ServerProcess;
let b: ServerProcess;
// With --store the scheduler lock sits on the node lease, which the database ends after SVC_TEST_NODE_LEASE_MS idle.
const ENV = {
  RUST_LOG: 'info',
  SVC_TEST_SCHEDULER_POLL_MS: '200',
  SVC_TEST_SCHEDULER_LEASE_MS: '1500',
  SVC_TEST_NODE_LEASE_MS: '1500',
};

before(async () => {
  sb = makeSandbox();
  createTenant(sb, 'demo');
  deployFlow(sb, flow('demo', 'tick', 'schedule: "*/1 * * * * *"', '## Step: t\n```ntd\n{"tick": true}\n```'));
  a = await startServer(sb, ['--no-auth'], ENV);
  b = await startServer(sb, ['--no-auth'], ENV);
});

after(async () => {
  for (const s of [a, b]) if (s?.child.signalCode === null && s.child.exitCode === null) s.child.kill('SIGCONT');
  await a?.stop();
  await b?.stop();
  sb?.cleanup();
});

test('a holder paused past its lease is taken over, and once resumed stands down: never two ticks in one second', async () => {
  await waitFor(
    'the first tick',
    () => logRows(sb, { flow: 'tick', event: 'received' }).length > 0 || undefined,
    8000,
    100,
  );
  const ownerPid = schedulerHolderPid(sb);
  assert.ok(
    ownerPid === a.child.pid || ownerPid === b.child.pid,
    `the scheduler lock is held by one of the servers (pid ${ownerPid})`,
  );
  const [holder, other] = ownerPid === a.child.pid ? [a, b] : [b, a];
  holder.child.kill('SIGSTOP');
  try {
    // On purpose: a pause twice the 1.5 s lease, so the other server takes the lock over meanwhile.
    await sleep(3000);
  } finally {
    holder.child.kill('SIGCONT');
  }
  const resumedAt = Date.now();
  await waitFor(
    'the resumed holder standing down',
    () => /scheduler lock lost/.test(holder.stderr()) || undefined,
    8000,
    100,
  );
  // A window of time on purpose: ticks after the resume, counted per second.
  await sleep(3000);
  const since = new Date(resumedAt - 1000).toISOString().slice(0, 19);
  const perSecond = new Map<string, number>();
  for (const r of logRows(sb, { flow: 'tick', event: 'received' }))
    if (r.ts.slice(0, 19) >= since) perSecond.set(r.ts, (perSecond.get(r.ts) ?? 0) + 1);
  assert.ok(perSecond.size >= 2, `the new holder ticks: ${[...perSecond.keys()].join(', ')}`);
  const doubled = [...perSecond].filter(([, n]) => n > 1);
  assert.deepEqual(doubled, [], 'no second tick in any second');
  assert.match(other.stderr(), /scheduler lock taken/);
});
