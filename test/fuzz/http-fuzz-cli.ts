/**
 * `npm run fuzz:http -- [--runs N] [--seed S] [--path P]`: the HTTP fuzz run at full size against a
 * fresh `svc serve` (docs/operations.md). Prints the seed, progress and the report; exits 1 when a
 * case breaks the property.
 */
import { createWriteStream } from 'node:fs';
import { parseArgs } from 'node:util';
import type { HttpCase } from './http-case.js';
import type { WireOutcome } from './wire-exchange.js';
import { startFuzzTarget } from './fuzz-target.js';
import { formatReport, freshSeed, fuzzHttp } from './http-fuzz.js';

const USAGE =
  'usage: npm run fuzz:http -- [--runs N (default 10000)] [--seed S] [--path P (with --seed: replay one shrunk case)] [--log FILE (one JSON line per exchange)]';

/** One exchange as a log line: the case (long strings cut) and what came back. */
function logLine(c: HttpCase, outcome: WireOutcome): string {
  const cut = (v: string) => (v.length > 200 ? `${v.slice(0, 200)}...(${v.length})` : v);
  const answer =
    outcome.kind === 'answer'
      ? { status: outcome.status, ms: outcome.ms, answer: cut(outcome.body.toString('utf8')) }
      : { status: outcome.kind, ms: outcome.ms };
  return `${JSON.stringify({ ...c, target: cut(c.target), body: cut(c.body), headers: c.headers.slice(0, 5).map(([n, v]) => [n, cut(v)]), ...answer })}\n`;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '10000' },
      seed: { type: 'string' },
      path: { type: 'string' },
      log: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const runs = Number(values.runs);
  const seed = values.seed === undefined ? freshSeed() : Number(values.seed);
  if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed)) {
    console.error(USAGE);
    return 2;
  }
  const log = values.log === undefined ? undefined : createWriteStream(values.log);
  const target = await startFuzzTarget();
  console.log(`seed ${seed}, ${runs} random cases; svc serve pid ${target.server.child.pid} at ${target.server.url}`);
  try {
    const report = await fuzzHttp(target, {
      runs,
      seed,
      ...(values.path === undefined ? {} : { path: values.path }),
      progress: (line) => console.log(line),
      ...(log === undefined
        ? {}
        : { onExchange: (c: HttpCase, outcome: WireOutcome) => log.write(logLine(c, outcome)) }),
    });
    console.log(formatReport(report));
    return report.failure === undefined ? 0 : 1;
  } finally {
    await target.close();
    log?.end();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
