import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { prepareKillTrials, runKillTrial, seededRandom, type KillTrialSetup } from './helpers/enqueue-kill-trial.js';
import { makeSandbox } from './helpers/svc.js';

/** Trials in `npm test`; `npm run fault:enqueue-kill` runs more (docs/operations.md). */
const TRIALS = 5;
/** Set SVC_FAULT_SEED to replay the kill moments of a run (each run prints its seed). */
const SEED = Number(process.env.SVC_FAULT_SEED ?? Date.now() % 2 ** 31);

describe('a kill -9 in the middle of an /enqueue storm (one state directory, one trial after another)', () => {
  const sandbox = makeSandbox();
  const random = seededRandom(SEED);
  let setup: KillTrialSetup | undefined;

  before(async () => {
    setup = await prepareKillTrials(sandbox);
  });
  after(async () => {
    await setup?.backend.close();
    sandbox.cleanup();
  });

  for (let trial = 1; trial <= TRIALS; trial++) {
    it(`trial ${trial}: loses no message that got a 202; after a restart every one is delivered at least once, none dead-lettered`, async (t) => {
      const r = await runKillTrial(sandbox, setup!, trial, random);
      t.diagnostic(
        `seed ${SEED}: ${r.acked} acked (kill after ${r.killAfterAcks}, ${r.deliveredAtKill} delivered by then), lost ${r.lost.length}, duplicates ${r.duplicates}, acknowledged without an audit entry ${r.unaudited.length}, delivered without one ${r.deliveriesUnaudited.length}, ${r.durationMs} ms`,
      );
      assert.deepEqual(r.otherAnswers, [], 'a healthy disk answers every submission 202');
      assert.ok(r.acked >= r.killAfterAcks, `the kill came after ${r.killAfterAcks} acknowledgements`);
      assert.deepEqual(r.lost, []);
      assert.deepEqual(r.unaudited, [], 'every acknowledged message has its queue.message.enqueued entry');
      assert.deepEqual(r.auditedTwice, [], 'and only one');
      assert.deepEqual(r.deliveriesUnaudited, [], 'every delivery has its queue.message.processed entry');
      assert.ok(r.dlqEmpty, 'nothing dead-lettered');
    });
  }
});
