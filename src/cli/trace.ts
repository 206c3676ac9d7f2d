/**
 * `svc trace enable|disable|list`: the payload-tracing flag per (tenant, flow). The operator at a
 * shell acts as a sysadmin. No command prints trace rows: only the support role reads them (the UI).
 */
import { Command, Option } from 'commander';
import { CLI_OPERATOR } from '../app/accounts/roles.js';
import { listTraceFlags, setTraceFlag, type TraceToggleResult } from '../app/use-cases/trace.js';
import type { TraceFlag } from '../store/contracts/index.js';
import { addStoreOptions, nameArg, type StoreFlags, tenantOption } from './options.js';
import { withStore } from './stores.js';
import { formatTable, out } from './table.js';

export function registerTrace(program: Command): void {
  const trace = program
    .command('trace')
    .description(
      'turn payload tracing on or off per flow, and list the flags (trace rows are read only by the support role)',
    );
  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    trace
      .command(verb)
      .description(
        enabled
          ? 'record step_traced and egress_traced rows for every delivery of the flow, from every process, until disabled; writes audit trace_enabled'
          : 'stop recording trace rows for the flow; writes audit trace_disabled',
      )
      .addOption(tenantOption('tenant id', { required: true }))
      .addOption(
        new Option('--flow <name>', 'a deployed flow of the tenant').makeOptionMandatory().argParser(nameArg('flow')),
      )
      .action((opts: TraceToggleOptions) => traceToggle(opts, enabled));
  }
  trace
    .command('list')
    .description(
      'list the trace flags that were ever set (a flow not listed is off): tenant, flow, enabled, updated_at',
    )
    .addOption(tenantOption('only this tenant'))
    .addOption(new Option('--json', 'print a JSON array'))
    .action(traceList);
  for (const c of trace.commands) addStoreOptions(c);
}

export interface TraceToggleOptions extends StoreFlags {
  tenant: string;
  flow: string;
}

export async function traceToggle(opts: TraceToggleOptions, enabled: boolean): Promise<void> {
  const r = await withStore(opts, (stores) =>
    setTraceFlag(stores, { tenant: opts.tenant, flow: opts.flow, enabled }, CLI_OPERATOR),
  );
  out(describeToggle(r));
}

function describeToggle(r: TraceToggleResult): string {
  const state = r.enabled ? 'on' : 'off';
  return r.changed
    ? `tracing of ${r.tenant}/${r.flow} is now ${state}`
    : `tracing of ${r.tenant}/${r.flow} was already ${state}; nothing changed`;
}

export interface TraceListOptions extends StoreFlags {
  tenant?: string;
  json?: boolean;
}

export async function traceList(opts: TraceListOptions): Promise<void> {
  const flags = await withStore(opts, (stores) => listTraceFlags(stores.traces, opts.tenant), { readOnly: true });
  if (opts.json) {
    out(JSON.stringify(flags, null, 2));
    return;
  }
  if (flags.length === 0) {
    out(
      'No trace flag set: tracing is off for every flow. Turn it on with: svc trace enable --tenant <t> --flow <name>',
    );
    return;
  }
  out(
    formatTable(
      ['TENANT', 'FLOW', 'TRACING', 'UPDATED_AT'],
      flags.map((f: TraceFlag) => [f.tenant, f.flow, f.enabled ? 'on' : 'off', f.updated_at]),
    ),
  );
}
