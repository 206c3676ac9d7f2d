/**
 * `svc dev <dir>`: the development loop. Every `*.flow.md` of the folder is deployed at start and
 * again on each save, under an automatic version label (app/use-cases/dev-deploy.ts); a file that does not
 * compile is reported as `file:line: step: message` and the loop goes on. Only against a state
 * directory, or a PostgreSQL store (`--store`), marked as a development one (app/maintenance/dev-state.ts).
 * Stops on SIGINT or SIGTERM, exit 0.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { devDeployFile, type DevDeployDeps, type DevDeployOutcome } from '../app/use-cases/dev-deploy.js';
import {
  claimDevState,
  DEV_STATE_MARKER,
  NotDevStateError,
  pgStoreMarker,
  stateDirMarker,
  type DevStateClaim,
  type DevStateMarker,
} from '../app/maintenance/dev-state.js';
import { ExitError } from '../common/errors.js';
import { formatDiagnostic, formatWarning } from '../flow/diagnostics.js';
import type { OpenedStore } from '../storage/index.js';
import { FolderWatcher } from './dev-watch.js';
import { addStoreOptions, type StoreFlags, tenantOption } from './options.js';
import { registryLocation, withStore } from './stores.js';
import { out } from './table.js';
import { testFiles } from './test.js';
import { resultText, summaryText } from './test-report.js';

const FLOW_SUFFIX = '.flow.md';
const LIB_SUFFIX = '.lib.md';
const SUITE_SUFFIX = '.test.md';

export function registerDev(program: Command): void {
  const command = program
    .command('dev')
    .description(
      "development loop: deploy every *.flow.md of <dir> now and on each save under the version dev-<UTC time>-<hash prefix>, into the registry of --db or the PostgreSQL store of --store (a svc serve on the same one answers with each new version at once), skipping a file whose artifact is already latest; a file with errors is reported as file:line: step: message and the loop goes on. Runs only against a development state directory or store (a dev-state file beside --db, or a row of the store's dev_state table: made on a first run into an empty one, or by --init). Ctrl-C or SIGTERM stops it (exit 0)",
    )
    .argument('<dir>', 'folder of *.flow.md files (its subfolders are not watched)')
    .addOption(
      tenantOption("deploy every flow under this tenant instead of its front matter's (registered when missing)"),
    )
    .addOption(
      new Option(
        '--libs <dir>',
        'directory of *.lib.md step libraries for "use:"; a save there redeploys every flow it changes',
      ),
    )
    .addOption(
      new Option(
        '--init',
        `mark the state directory (writes ${DEV_STATE_MARKER} beside --db) or the store (a row of its dev_state table) as a development one although it holds a registry`,
      ),
    )
    .addOption(new Option('--force', 'run against an unmarked state directory or store this once, without marking it'))
    .action(dev);
  addStoreOptions(command);
}

export interface DevOptions extends StoreFlags {
  tenant?: string;
  libs?: string;
  init?: boolean;
  force?: boolean;
}

export async function dev(dir: string, opts: DevOptions): Promise<void> {
  requireFolder(dir, '<dir>');
  if (opts.libs !== undefined) requireFolder(opts.libs, '--libs');
  const claim = await withStore(opts, async (s) => {
    const marker = await devStateMarker(s);
    try {
      return { marker, claim: await claimDevState(marker, { init: opts.init, force: opts.force }) };
    } catch (err) {
      if (!(err instanceof NotDevStateError)) throw err;
      const flag = opts.store === undefined ? `--db ${opts.db}` : `--store '${registryLocation(opts)}'`;
      throw new ExitError(
        1,
        `refused: ${err.message}.\nIf it is a development ${marker.kind}, mark it once with: svc dev ${dir} --init ${flag}\nor run this once anyway with --force`,
      );
    }
  });
  process.stderr.write(`${describeClaim(claim.claim, claim.marker)}\n`);
  // One registry for the whole loop: on a store, one pool of connections rather than one per save.
  await withStore(opts, (stores) => watchAndDeploy(dir, opts, stores));
}

/** `svc dev`'s guard of the target: the state directory's marker file (nothing is opened), or the PostgreSQL store's marker row. */
async function devStateMarker(s: OpenedStore): Promise<DevStateMarker> {
  if (s.kind === 'sqlite') return stateDirMarker(s.paths);
  const { PgDevState } = await import('../store/pg/pg-dev-state.js');
  return pgStoreMarker(new PgDevState(s.db), s.location);
}

/** Deploys the folder, then each save, until a signal or a broken watch. */
async function watchAndDeploy(dir: string, opts: DevOptions, stores: DevDeployDeps): Promise<void> {
  const watchers: FolderWatcher[] = [];
  let stop: (why?: Error) => void = () => undefined;
  const stopped = new Promise<Error | undefined>((resolve) => (stop = resolve));
  // One deploy at a time, in the order the saves were seen: two deploys of one new tenant's flows
  // must not both find it unregistered.
  let deploys = Promise.resolve();
  // The folder's examples run once after each burst of deploys (a save, or the whole folder).
  let examplesQueued = false;
  const testAfter = () => {
    if (examplesQueued) return;
    examplesQueued = true;
    deploys = deploys
      .then(() => {
        examplesQueued = false;
        return runExamples(dir, opts);
      })
      .catch((err: unknown) => stop(err instanceof Error ? err : new Error(String(err))));
  };
  const deployOne = (name: string) => {
    deploys = deploys
      .then(() => report(join(dir, name), opts, stores))
      .catch((err: unknown) => stop(err instanceof Error ? err : new Error(String(err))));
    testAfter();
  };
  const deployAll = () => {
    for (const name of flowFiles(dir)) deployOne(name);
  };
  const onSignal = () => stop();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    // Watching starts before the first pass, so a save made during it is not missed.
    watchers.push(
      new FolderWatcher({ dir, suffix: FLOW_SUFFIX, onChange: deployOne, onUnknown: deployAll, onError: stop }),
    );
    // A suite's save reruns the examples; nothing is deployed for it.
    watchers.push(
      new FolderWatcher({ dir, suffix: SUITE_SUFFIX, onChange: testAfter, onUnknown: testAfter, onError: stop }),
    );
    if (opts.libs !== undefined)
      watchers.push(
        new FolderWatcher({
          dir: opts.libs,
          suffix: LIB_SUFFIX,
          onChange: deployAll,
          onUnknown: deployAll,
          onError: stop,
        }),
      );
    deployAll();
    await deploys;
    process.stderr.write(
      `watching ${dir}${opts.libs === undefined ? '' : ` and ${opts.libs}`} for saves; Ctrl-C stops\n`,
    );
    const failure = await stopped;
    if (failure !== undefined) throw new ExitError(1, `error: stopped watching: ${failure.message}`);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    for (const w of watchers) w.close();
    await deploys;
  }
}

/**
 * The folder's examples (its own flow files and their suites), as `svc test` runs them: each
 * failure with its differences, then one result line. A folder without examples prints nothing.
 */
async function runExamples(dir: string, opts: DevOptions): Promise<void> {
  const files = flowFiles(dir).map((n) => join(dir, n));
  if (files.length === 0) return;
  const failures: string[] = [];
  // A file that does not compile was reported by its deploy already.
  const report = await testFiles(
    files,
    { libs: opts.libs },
    () => undefined,
    (r) => {
      if (r.verdict === 'failed') failures.push(resultText(r));
    },
    () => undefined,
  );
  if (report.results.length === 0 && report.compileErrors.length === 0) return;
  for (const f of failures) out(f);
  const unrun = report.compileErrors.length > 0 ? ` (${report.compileErrors.length} file error(s): not run)` : '';
  out(`examples: ${summaryText(report)}${unrun}`);
}

/** Every `*.flow.md` of the folder, sorted, hidden names left out (as the watcher does). */
function flowFiles(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => n.endsWith(FLOW_SUFFIX) && !n.startsWith('.'))
      .sort();
  } catch (err) {
    process.stderr.write(`error: cannot read ${dir}: ${(err as Error).message}\n`);
    return [];
  }
}

/** Deploys one file and says what happened; any failure is reported and the loop goes on. */
async function report(path: string, opts: DevOptions, stores: DevDeployDeps): Promise<void> {
  if (!existsSync(path)) {
    out(`${path}: removed; its deployed versions stay in the registry`);
    return;
  }
  let outcome: DevDeployOutcome;
  try {
    outcome = await devDeployFile(stores, { path, libs: opts.libs, tenant: opts.tenant });
  } catch (err) {
    // A refusal (a disabled tenant, an unreadable file) or a storage error: either way the loop goes on.
    const why = err instanceof Error ? err.message : String(err);
    process.stderr.write(`${path}: error: ${why}; not deployed, waiting for the next save\n`);
    return;
  }
  for (const w of outcome.warnings) process.stderr.write(`${formatWarning(w)}\n`);
  if (outcome.kind === 'refused') {
    for (const d of outcome.diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
    const n = outcome.diagnostics.length;
    process.stderr.write(`${path}: not deployed (${n} error${n === 1 ? '' : 's'}); waiting for the next save\n`);
  } else if (outcome.kind === 'unchanged') {
    out(`${path}: unchanged, ${outcome.tenant}/${outcome.flow} ${outcome.version} is latest`);
  } else {
    if (outcome.registeredTenant) out(`registered tenant ${outcome.tenant} (audit tenant.registered, actor svc dev)`);
    out(`deployed ${outcome.tenant}/${outcome.flow} ${outcome.version} (${path})`);
  }
}

function describeClaim(claim: DevStateClaim, m: DevStateMarker): string {
  switch (claim) {
    case 'marked':
      return `development ${m.kind} ${m.where}`;
    case 'marked-empty':
      return `development ${m.kind} ${m.where} (new: marked with ${m.marker})`;
    case 'marked-init':
      return `development ${m.kind} ${m.where} (marked now with ${m.marker}, --init)`;
    case 'forced':
      return `WARNING: ${m.where} is not marked as a development ${m.kind}; deploying into it anyway (--force)`;
  }
}

function requireFolder(path: string, what: string): void {
  let isDir = false;
  try {
    isDir = statSync(path).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) throw new ExitError(1, `error: ${what} ${path} is not a folder`);
}
