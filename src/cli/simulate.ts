/** `svc simulate`: mixed /run and /enqueue traffic over the demo flows, with a live view and a summary, the way a load tool shows a run. */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Command, InvalidArgumentError, Option } from 'commander';
import { loadDemoFlows } from './simulate/flows.js';
import { demoSet, DEMO_DIR_DEFAULT_TEXT } from './demo-set.js';
import { collectKeys, flowLabel, keyedFlows, parseKeyPair, Rotation, KEY_FORM } from './simulate/plan.js';
import { SimStats, type WithdrawnFlow } from './simulate/stats.js';
import { ExitError, SvcError } from '../common/errors.js';
import { svcArg } from './args.js';
import { intArg } from './options.js';
import { startLoad } from './simulate/load-runner.js';
import { liveLine, liveTable, summaryText } from './simulate/live-view.js';
import { out } from './table.js';

export function registerSimulate(program: Command): void {
  program
    .command('simulate')
    .description(
      'send mixed traffic (about a third to /enqueue, the rest to /run) to the demo flows of the keyed tenants, with their sample inputs; live view every second, summary at the end (Ctrl-C ends early with the summary)',
    )
    .addOption(
      new Option('--url <base>', 'base URL of the running service').default('http://127.0.0.1:9090').argParser(urlArg),
    )
    .addOption(
      new Option('--duration <secs>', 'how long to send traffic, in seconds')
        .default(30)
        .argParser(intArg('--duration', 1)),
    )
    .addOption(
      new Option(
        '--api-key <tenant>=<key>',
        'API key of a tenant; repeatable; also read from SVC_SIMULATE_API_KEYS (comma-separated tenant=key); tenants without a key are skipped',
      )
        .default([], 'none')
        .argParser((value: string, previous: string[]) => [...previous, svcArg((v) => (parseKeyPair(v), v))(value)]),
    )
    .addOption(
      new Option(
        '--demo-dir <dir>',
        'directory of <name>.flow.md files, each with its sample input in <name>.sample.json',
      ).default(undefined, DEMO_DIR_DEFAULT_TEXT),
    )
    .addOption(
      new Option('--connections <n>', 'requests in flight at once, each on its own keep-alive connection')
        .default(8)
        .argParser(intArg('--connections', 1)),
    )
    .addOption(
      new Option(
        '--rate <req/s>',
        'target requests per second, open loop: requests are issued on schedule whatever the latency and timed from their scheduled start (default: as fast as answers come)',
      ).argParser(rateArg),
    )
    .addOption(new Option('--json', 'print only the summary, as JSON, on stdout'))
    .action(simulate);
}

export interface SimulateOptions {
  url: string;
  duration: number;
  apiKey: string[];
  demoDir?: string;
  connections: number;
  rate?: number;
  json?: boolean;
}

function urlArg(value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new InvalidArgumentError(`--url must be an http(s) URL such as http://127.0.0.1:9090, got "${value}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new InvalidArgumentError(`--url must be http or https, got "${value}"`);
  return value.replace(/\/+$/, '');
}

function rateArg(value: string): number {
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || !(n > 0))
    throw new InvalidArgumentError(`--rate must be a positive number of requests per second, got "${value}"`);
  return n;
}

/** Refusals of bad input (keys, demo directory) become exit 1 with their message, before any request is sent. */
function refuse<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof SvcError) throw new ExitError(1, `error: ${err.message}`);
    throw err;
  }
}

export async function simulate(opts: SimulateOptions): Promise<void> {
  const keys = refuse(() => collectKeys(opts.apiKey, process.env.SVC_SIMULATE_API_KEYS));
  const demo = demoSet(opts.demoDir);
  const flows = refuse(() => loadDemoFlows(demo.dir));
  process.stderr.write(`demo flows: ${demo.dir} (${demo.from})\n`);
  const { used, skippedTenants } = keyedFlows(flows, keys);
  for (const t of skippedTenants)
    process.stderr.write(
      `note: tenant "${t}" has no key (${KEY_FORM} or SVC_SIMULATE_API_KEYS); its demo flows are skipped\n`,
    );
  if (used.length === 0) {
    throw new ExitError(
      1,
      `error: no demo flow of ${demo.dir} belongs to a tenant with a key; give one with ${KEY_FORM} or SVC_SIMULATE_API_KEYS`,
    );
  }

  const stats = new SimStats();
  const withdrawn: WithdrawnFlow[] = [];
  const runId = `sim-${randomUUID().slice(0, 8)}`;
  const durationMs = opts.duration * 1000;
  const load = startLoad({
    url: opts.url,
    durationMs,
    connections: opts.connections,
    rate: opts.rate,
    keys,
    rotation: new Rotation(used),
    stats,
    runId,
    onWithdraw: (t, status, message) => {
      withdrawn.push({ flow: flowLabel(t), route: t.route, status, reason: message });
      process.stderr.write(
        `withdrawn: ${flowLabel(t)}: its /${t.route} answered ${status} (${message}); neither /run nor /enqueue is sent to it again, the other flows go on\n`,
      );
    },
  });
  const onSigint = () => load.stop('interrupted');
  process.once('SIGINT', onSigint);
  // A diagnostic line on stderr (stdout stays the summary alone under --json): the run is under
  // way, and from here Ctrl-C ends it with the summary.
  process.stderr.write(`run ${runId} started (Ctrl-C ends it with the summary)\n`);

  // The live view: a redrawn table on a terminal, a plain line a second otherwise; none with --json
  // (stdout holds the summary alone), except plain lines on stderr when a person is watching it.
  const started = performance.now();
  const tty = !opts.json && process.stdout.isTTY === true;
  const liveTo = opts.json ? (process.stderr.isTTY ? process.stderr : undefined) : process.stdout;
  let drawnLines = 0;
  let lastTick = started;
  const ticker = setInterval(() => {
    const now = performance.now();
    const elapsed = (now - started) / 1000;
    const left = Math.max(0, opts.duration - elapsed);
    const rows = stats.tick(elapsed, (now - lastTick) / 1000);
    lastTick = now;
    if (liveTo === undefined) return;
    if (tty) {
      const text = liveTable(rows, elapsed, left);
      liveTo.write(`${drawnLines > 0 ? `\x1b[${drawnLines}A\x1b[0J` : ''}${text}\n`);
      drawnLines = text.split('\n').length;
    } else {
      liveTo.write(`${liveLine(rows.total, elapsed, left)}\n`);
    }
  }, 1000);

  const result = await load.done;
  clearInterval(ticker);
  process.off('SIGINT', onSigint);
  const summary = stats.summary(
    {
      url: opts.url,
      run_id: runId,
      stopped: result.stopped,
      connections: opts.connections,
      rate: opts.rate ?? null,
      withdrawn,
    },
    (performance.now() - started) / 1000,
  );
  out(opts.json ? JSON.stringify(summary, null, 2) : summaryText(summary));
  if (result.stopped === 'unauthorized' || result.stopped === 'nothing_left')
    throw new ExitError(1, `error: ${result.message ?? result.stopped}`);
}
