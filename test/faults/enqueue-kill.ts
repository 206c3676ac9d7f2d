/**
 * `npm run fault:enqueue-kill -- [--trials 20] [--seed N]`: the kill -9 trial of
 * test/queue-crash.test.ts, run many times against one state directory (or, with
 * SVC_TEST_STORE=postgres, a PostgreSQL schema); prints each trial's figures and a summary, and
 * exits 1 if any acknowledged message was lost, or any acknowledgement or delivery has no audit entry.
 */
import { parseArgs } from 'node:util';
import { prepareKillTrials, runKillTrial, seededRandom, type KillTrialResult } from '../helpers/enqueue-kill-trial.js';
import { makeSandbox } from '../helpers/svc.js';

function positiveInt(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new Error(`--${name} must be a positive whole number, not ${JSON.stringify(text)}`);
  return n;
}

function row(r: KillTrialResult): string {
  const cells = [
    r.trial,
    r.killAfterAcks,
    r.acked,
    r.deliveredAtKill,
    r.lost.length,
    r.duplicates,
    r.unaudited.length,
    r.auditedTwice.length,
    r.deliveriesUnaudited.length,
    r.otherAnswers.length,
    r.dlqEmpty ? 'yes' : 'NO',
    (r.durationMs / 1000).toFixed(1),
  ];
  return cells.map((c) => String(c).padStart(11)).join('');
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { trials: { type: 'string', default: '20' }, seed: { type: 'string' } } });
  const trials = positiveInt('trials', values.trials);
  const seed = values.seed === undefined ? Date.now() % 2 ** 31 : positiveInt('seed', values.seed);
  const sandbox = makeSandbox();
  const results: KillTrialResult[] = [];
  const setup = await prepareKillTrials(sandbox);
  try {
    const random = seededRandom(seed);
    process.stdout.write(`kill -9 during an /enqueue storm: ${trials} trials, seed ${seed}\n`);
    process.stdout.write(
      `${['trial', 'kill at', 'acked', 'delivered', 'lost', 'dupes', 'ack no aud', 'ack 2 aud', 'dlv no aud', 'non-202', 'dlq empty', 'secs'].map((h) => h.padStart(11)).join('')}\n`,
    );
    for (let trial = 1; trial <= trials; trial++) {
      const r = await runKillTrial(sandbox, setup, trial, random);
      results.push(r);
      process.stdout.write(`${row(r)}\n`);
      if (r.lost.length > 0)
        process.stdout.write(`  lost: ${r.lost.slice(0, 20).join(', ')}${r.lost.length > 20 ? ' ...' : ''}\n`);
      if (r.unaudited.length > 0)
        process.stdout.write(
          `  acknowledged without an audit entry: ${r.unaudited.slice(0, 20).join(', ')}${r.unaudited.length > 20 ? ' ...' : ''}\n`,
        );
    }
  } finally {
    await setup.backend.close();
    sandbox.cleanup();
  }
  const sum = (f: (r: KillTrialResult) => number) => results.reduce((a, r) => a + f(r), 0);
  const lost = sum((r) => r.lost.length);
  const failed = results.filter(
    (r) =>
      r.lost.length > 0 ||
      r.unaudited.length > 0 ||
      r.auditedTwice.length > 0 ||
      r.deliveriesUnaudited.length > 0 ||
      r.otherAnswers.length > 0 ||
      !r.dlqEmpty,
  ).length;
  process.stdout.write(
    `total: ${sum((r) => r.acked)} acked, ${lost} lost, ${sum((r) => r.duplicates)} duplicates, ` +
      `${sum((r) => r.unaudited.length)} acknowledged and ${sum((r) => r.deliveriesUnaudited.length)} delivered without an audit entry, ` +
      `${sum((r) => r.auditedTwice.length)} acknowledged with two, ` +
      `acked per trial ${Math.min(...results.map((r) => r.acked))}-${Math.max(...results.map((r) => r.acked))}, ` +
      `${(sum((r) => r.durationMs) / 1000).toFixed(1)} s; ${failed} of ${trials} trials failed\n`,
  );
  if (failed > 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
