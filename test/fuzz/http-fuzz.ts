/**
 * The HTTP fuzz run shared by `npm test` (a small sample) and `npm run fuzz:http` (10,000 cases and
 * more): fast-check generates requests (the known cases first), each goes to the real server on a
 * raw socket, and the property holds when no answer is a 5xx the spec does not give, no request
 * hangs, the process stays alive and /health answers every `healthEvery` cases. The run records a
 * status histogram and the server's RSS, and reports the first failure and the shrunk one.
 */
import fc from 'fast-check';
import { describeCase, leavesServerWaiting, toWire, type HttpCase } from './http-case.js';
import { specifiedServerError, violation } from './http-oracle.js';
import { KNOWN_CASES } from './known-cases.js';
import { httpCase } from './request-arbitraries.js';
import type { FuzzTarget } from './fuzz-target.js';
import { exchange, type WireOutcome } from './wire-exchange.js';

export interface FuzzOptions {
  /** Random cases to generate (the known cases come on top). */
  readonly runs: number;
  /** fast-check's seed; the same seed replays the same cases. @default a fresh one */
  readonly seed?: number;
  /** fast-check's counterexample path: with `seed`, replays one shrunk case. */
  readonly path?: string;
  /** /health is checked and RSS sampled every this many cases. @default 25 */
  readonly healthEvery?: number;
  /** How long a complete request may go unanswered before it counts as a hang. Milliseconds. @default 15000 */
  readonly hangMs?: number;
  /** How long to wait on a request that promised more bytes than it sent. Milliseconds. @default 3000 */
  readonly stallWaitMs?: number;
  /** Quiet time after the last case before the closing RSS is read. Milliseconds. @default 3000 */
  readonly settleMs?: number;
  /** Called after every exchange (the script's `--log` writes them out). */
  readonly onExchange?: (c: HttpCase, outcome: WireOutcome) => void;
  /** Called with a progress line now and then. */
  readonly progress?: (line: string) => void;
}

export interface FuzzFailure {
  /** What the property saw, in one line. */
  readonly violation: string;
  /** The first failing case as generated. */
  readonly first: string;
  /** The case after fast-check shrank it (when the server was still up to shrink against). */
  readonly shrunk: string;
  readonly numShrinks: number;
  /** `--seed <seed> --path <path>` replays the shrunk case. */
  readonly path: string;
}

export interface FuzzReport {
  readonly seed: number;
  /** Requests sent, known cases and shrink attempts included. */
  readonly cases: number;
  /** Answers by status; `closed` and `silent` for exchanges that got none. */
  readonly statuses: Readonly<Record<string, number>>;
  /** Cases by the route template they aimed at. */
  readonly routes: Readonly<Record<string, number>>;
  /** 5xx answers the spec gives here, by spec row. */
  readonly specifiedServerErrors: Readonly<Record<string, number>>;
  readonly healthChecks: number;
  /** Server RSS: after start-up, the highest sample, and after the run and a quiet settle. Bytes. */
  readonly rss: { readonly startBytes: number; readonly peakBytes: number; readonly endBytes: number };
  /** The slowest exchange that got an answer. Milliseconds. */
  readonly slowestAnswerMs: number;
  readonly durationMs: number;
  readonly failure?: FuzzFailure;
}

/** A seed for a run that was given none (printed, so the run can be replayed). */
export const freshSeed = (): number => (Date.now() ^ Math.floor(Math.random() * 0x7fffffff)) >>> 0;

const bump = (counts: Record<string, number>, key: string) => (counts[key] = (counts[key] ?? 0) + 1);

export async function fuzzHttp(target: FuzzTarget, options: FuzzOptions): Promise<FuzzReport> {
  const { runs, healthEvery = 25, hangMs = 15_000, stallWaitMs = 3000, settleMs = 3000, progress } = options;
  const seed = options.seed ?? freshSeed();
  const started = Date.now();
  const statuses: Record<string, number> = {};
  const routes: Record<string, number> = {};
  const specified: Record<string, number> = {};
  let cases = 0;
  let healthChecks = 0;
  let slowestAnswerMs = 0;
  let first: { case: HttpCase; violation: string } | undefined;

  if (!(await target.healthy())) throw new Error('the server is not healthy before the run');
  const startBytes = target.rssBytes();
  let peakBytes = startBytes;

  const serverGone = () => {
    const { exitCode, signalCode } = target.server.child;
    return exitCode !== null || signalCode !== null
      ? `the server process exited (code ${exitCode}, signal ${signalCode})`
      : undefined;
  };

  const check = async (c: HttpCase): Promise<string | undefined> => {
    cases += 1;
    bump(routes, c.route);
    const request = toWire(c, target.wire);
    const outcome: WireOutcome = await exchange(target.server.port, request, {
      head: c.method === 'HEAD',
      waitMs: leavesServerWaiting(c) ? stallWaitMs : hangMs,
      halfClose: c.halfClose,
    });
    bump(statuses, outcome.kind === 'answer' ? String(outcome.status) : outcome.kind);
    options.onExchange?.(c, outcome);
    if (outcome.kind === 'answer') {
      slowestAnswerMs = Math.max(slowestAnswerMs, outcome.ms);
      const row = outcome.status >= 500 ? specifiedServerError(outcome) : undefined;
      if (row !== undefined) bump(specified, row);
    }
    const gone = serverGone();
    if (gone !== undefined) return gone;
    const wrong = violation(c, outcome, request.length);
    if (wrong !== undefined) return wrong;
    if (cases % healthEvery === 0) {
      healthChecks += 1;
      if (!(await target.healthy())) return `/health did not answer 200 after case ${cases}`;
      peakBytes = Math.max(peakBytes, target.rssBytes());
      if (progress !== undefined && cases % (healthEvery * 40) === 0)
        progress(`${cases} cases, RSS ${mib(peakBytes)} MiB peak`);
    }
    return undefined;
  };

  const property = fc.asyncProperty(httpCase, async (c) => {
    const wrong = await check(c);
    if (wrong === undefined) return;
    first ??= { case: c, violation: wrong };
    throw new Error(wrong);
  });

  // The known cases run first, each once, with their expected statuses; then the random ones.
  let failure: FuzzFailure | undefined;
  for (const c of KNOWN_CASES) {
    const wrong = await check(c);
    if (wrong !== undefined) {
      failure = { violation: wrong, first: describeCase(c), shrunk: describeCase(c), numShrinks: 0, path: '' };
      break;
    }
  }
  if (failure === undefined) {
    const details = await fc.check(property, {
      numRuns: runs,
      seed,
      ...(options.path === undefined ? {} : { path: options.path, endOnFailure: true }),
    });
    if (details.failed) {
      const shrunk = details.counterexample?.[0];
      const message =
        details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
      failure = {
        violation: first?.violation ?? message,
        first: first === undefined ? '(not recorded)' : describeCase(first.case),
        // After a crash every shrink attempt fails for want of a server: the first case is the finding.
        shrunk:
          serverGone() !== undefined
            ? '(not shrunk: the server was gone)'
            : shrunk === undefined
              ? '(none)'
              : `${message}\n${describeCase(shrunk)}`,
        numShrinks: details.numShrinks,
        path: details.counterexamplePath ?? '',
      };
    }
  }

  // Settle: the log and audit writers flush in batches; then the closing figures.
  await new Promise((r) => setTimeout(r, settleMs));
  const gone = serverGone();
  if (failure === undefined && gone !== undefined)
    failure = { violation: gone, first: '(after the last case)', shrunk: '', numShrinks: 0, path: '' };
  if (failure === undefined && !(await target.healthy()))
    failure = { violation: '/health did not answer 200 after the run', first: '', shrunk: '', numShrinks: 0, path: '' };
  const endBytes = gone === undefined ? target.rssBytes() : 0;
  peakBytes = Math.max(peakBytes, endBytes);
  return {
    seed,
    cases,
    statuses,
    routes,
    specifiedServerErrors: specified,
    healthChecks,
    rss: { startBytes, peakBytes, endBytes },
    slowestAnswerMs,
    durationMs: Date.now() - started,
    ...(failure === undefined ? {} : { failure }),
  };
}

export const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);

/** The report as the lines the script prints and the test attaches to a failure. */
export function formatReport(report: FuzzReport): string {
  const sorted = (counts: Readonly<Record<string, number>>) =>
    Object.entries(counts)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ');
  const lines = [
    `seed: ${report.seed}`,
    `cases: ${report.cases} in ${(report.durationMs / 1000).toFixed(1)} s (slowest answer ${report.slowestAnswerMs} ms), /health checked ${report.healthChecks} times`,
    `statuses: ${sorted(report.statuses)}`,
    `routes aimed at: ${sorted(report.routes)}`,
    `5xx the spec gives: ${sorted(report.specifiedServerErrors) || 'none'}`,
    `RSS: start ${mib(report.rss.startBytes)} MiB, peak ${mib(report.rss.peakBytes)} MiB, end ${mib(report.rss.endBytes)} MiB (end - start ${mib(report.rss.endBytes - report.rss.startBytes)} MiB)`,
  ];
  const f = report.failure;
  if (f === undefined) lines.push('result: every case within the spec');
  else
    lines.push(
      `result: FAILED: ${f.violation}`,
      `first failing case:\n${f.first}`,
      `shrunk (${f.numShrinks} shrinks${f.path ? `, replay with --seed ${report.seed} --path ${f.path}` : ''}):\n${f.shrunk}`,
    );
  return lines.join('\n');
}
