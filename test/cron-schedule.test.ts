/** Black-box: six-field schedules tick, five-field ones never do, and only one of two servers on a state dir runs them. */
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

/** Deploys flow `name` of tenant demo, scheduled by `schedule`. */
function deploy(name: string, schedule: string): void {
  deployFlow(
    sb,
    flow(
      'demo',
      name,
      `schedule: "${schedule}"`,
      `# ${name}\n\n## Step: t\n\`\`\`ntd\n{"tick": "{{ ctx.correlation_id }}"}\n\`\`\``,
    ),
  );
}

// With --store the scheduler lock sits on the node lease: its lease is SVC_TEST_NODE_LEASE_MS.
const ENV = {
  RUST_LOG: 'info',
  SVC_TEST_SCHEDULER_POLL_MS: '200',
  SVC_TEST_SCHEDULER_LEASE_MS: '1500',
  SVC_TEST_NODE_LEASE_MS: '1500',
};

before(async () => {
  sb = makeSandbox();
  createTenant(sb, 'demo');
  deploy('tick', '*/1 * * * * *');
  deploy('five', '* * * * *');
  a = await startServer(sb, ['--no-auth'], ENV);
  b = await startServer(sb, ['--no-auth'], ENV);
});

after(async () => {
  await a?.stop();
  await b?.stop();
  sb?.cleanup();
});

function count(flowName: string, event: 'received' | 'completed'): number {
  return logRows(sb, { tenant: 'demo', flow: flowName, event }).length;
}

test('a six-field schedule ticks about once a second with one of two servers; the other takes over when it dies', async () => {
  await waitFor('the first tick completed', () => count('tick', 'completed') > 0, 8000, 200);
  const c0 = count('tick', 'received');
  assert.ok(c0 > 0, 'the schedule fired');
  // A window of time on purpose: the test counts the ticks that fall into it.
  await sleep(3000);
  const perWindow = count('tick', 'received') - c0;
  // One scheduler: about 3 ticks in 3 s; two would give about 6.
  assert.ok(perWindow >= 2 && perWindow <= 4, `ticks in 3 s: ${perWindow}`);

  const ownerPid = schedulerHolderPid(sb);
  const [holder, other] = ownerPid === a.child.pid ? [a, b] : [b, a];
  assert.equal(ownerPid, holder.child.pid);
  await holder.kill9();
  // On purpose: the survivor must take over within the lease (1.5 s), so a 2.5 s window from here holds its ticks.
  await sleep(500);
  const c1 = count('tick', 'received');
  await sleep(2500);
  const after = count('tick', 'received') - c1;
  assert.ok(after >= 1 && after <= 4, `ticks after take-over: ${after}`);
  assert.match(other.stderr(), /scheduler lock taken/);
});

test('a five-field schedule never fires and the log says why', () => {
  assert.equal(count('five', 'received'), 0);
  assert.match(a.stderr() + b.stderr(), /demo\/five is not scheduled.*has 5 fields; a six-field cron/);
});
