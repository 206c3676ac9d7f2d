/** `svc config check`: each deployed flow's configuration keys as set, set-but-empty or MISSING (never values). */
import type { Command } from 'commander';
import { ExitError } from '../common/errors.js';
import {
  checkFlowConfig,
  formatConfigReport,
  missingConfig,
  type FlowConfigNeeds,
} from '../app/runtime/config-check.js';
import type { Awaitable } from '../common/awaitable.js';
import { configNeeds } from '../app/runtime/deployed-flows.js';
import { addStoreOptions, type StoreFlags } from './options.js';
import { registryLocation, withStore } from './stores.js';

/** Where the flows come from; the registry supplies it. Throwing means the registry cannot be listed. */
export interface ConfigListSource {
  list(
    target: StoreFlags,
  ): Awaitable<{ flows: FlowConfigNeeds[]; unreadable: { tenant: string; flow: string; error: string }[] }>;
}

export interface ConfigCheckOptions extends StoreFlags {
  /** Print one JSON object `{keys, unreadable}` instead of lines; the exit status is the same. */
  readonly json?: boolean;
}

/** Prints the report; throws ExitError(1) on a missing key, an unreadable artifact or an unlistable registry. */
export async function configCheck(
  opts: ConfigCheckOptions,
  source: ConfigListSource,
  out: (line: string) => void = console.log,
  err: (line: string) => void = console.error,
): Promise<void> {
  let listing: Awaited<ReturnType<ConfigListSource['list']>>;
  try {
    listing = await source.list(opts);
  } catch (e) {
    throw new ExitError(1, `cannot list the registry at ${registryLocation(opts)}: ${(e as Error).message}`);
  }
  const reports = checkFlowConfig(listing.flows);
  if (opts.json) {
    out(JSON.stringify({ keys: reports, unreadable: listing.unreadable }, null, 2));
  } else {
    if (reports.length === 0) out('No deployed flow declares configuration keys.');
    for (const line of formatConfigReport(reports)) out(line);
    for (const u of listing.unreadable) err(`${u.tenant}/${u.flow}: artifact unreadable: ${u.error}`);
  }
  const missing = missingConfig(reports);
  const problems: string[] = [];
  if (missing.length > 0)
    problems.push(`${missing.length} configuration key(s) MISSING (set ${missing.map((m) => m.variable).join(', ')})`);
  if (listing.unreadable.length > 0) problems.push(`${listing.unreadable.length} artifact(s) unreadable`);
  if (problems.length > 0) throw new ExitError(1, problems.join('; '));
}

/** Adds `config check` to the program; the lead passes the registry-backed source. */
export function registerConfigCheck(program: Command, source: ConfigListSource): void {
  const config = program.command('config').description('Environment configuration required by deployed flows');
  const check = config
    .command('check')
    .description(
      "List each deployed flow's configuration keys (SVC_CONFIG_<KEY>), from the registry of --db or --store, as set, set-but-empty or MISSING; checked against this process's environment and .env; never prints values. Exits 1 on any missing key, unreadable artifact or unlistable registry",
    )
    .option(
      '--json',
      'print one JSON object {keys: [{tenant, flow, key, variable, state}], unreadable: [...]}; same exit status',
    )
    .action(async (opts: ConfigCheckOptions) => configCheck(opts, source));
  addStoreOptions(check);
}

/** The registry of `--db` or `--store`: every latest artifact (a missing SQLite registry lists nothing). */
export const registryConfigSource: ConfigListSource = {
  list: (target) => withStore(target, ({ artifacts }) => configNeeds(artifacts), { readOnly: true }),
};
