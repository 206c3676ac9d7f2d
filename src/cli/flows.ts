/** `svc flows list | show`: the deployed flows, their versions, front matter and doors (read-only). */
import { Command, Option } from 'commander';
import { stringify } from 'yaml';
import { listFlows, showFlow, type FlowDetails, type FlowSummary } from '../app/use-cases/flow-catalog.js';
import { DIAGRAM_FORMATS, flowDiagram, type DiagramFormat } from '../app/use-cases/flow-diagram.js';
import type { ArtifactsStore } from '../store/contracts/index.js';
import { ExitError, SvcError } from '../common/errors.js';
import { nonEmptyArg } from './args.js';
import { addStoreOptions, nameArg, type StoreFlags, tenantOption } from './options.js';
import { withStore } from './stores.js';
import { formatTable, out } from './table.js';

export function registerFlows(program: Command): void {
  const flows = program
    .command('flows')
    .description("list the deployed flows and show one flow's versions, front matter and doors (read-only)");
  flows
    .command('list')
    .description(
      "every flow's latest version: tenant, flow, latest version, hash, created_at, and the SOAP (WSDL), gRPC and schedule markers; exit 1 when an artifact is unreadable",
    )
    .addOption(tenantOption('only this tenant'))
    .addOption(new Option('--json', 'print a JSON array (full hashes)'))
    .action(flowsList);
  flows
    .command('show')
    .description(
      'every version of a flow (oldest first), then the front matter (as compiled, defaults filled in) and the doors of one version; or, with --format, its diagram',
    )
    .addOption(tenantOption('tenant id', { required: true }))
    .addOption(new Option('--flow <name>', 'flow name').makeOptionMandatory().argParser(nameArg('flow')))
    .addOption(
      new Option('--version <v>', 'the version to describe (default: latest)').argParser(nonEmptyArg('--version')),
    )
    .addOption(new Option('--json', 'print one JSON object'))
    .addOption(
      new Option(
        '--format <format>',
        "print only the version's diagram: svg (the UI's picture), mermaid (flowchart, for Markdown) or dot (Graphviz)",
      )
        .choices([...DIAGRAM_FORMATS])
        .conflicts('json'),
    )
    .action(flowsShow);
  for (const c of flows.commands) addStoreOptions(c);
}

export interface FlowsListOptions extends StoreFlags {
  tenant?: string;
  json?: boolean;
}

export async function flowsList(opts: FlowsListOptions): Promise<void> {
  const flows = await withStore(opts, (s) => listFlows(s.artifacts, opts.tenant), { readOnly: true });
  if (opts.json) out(JSON.stringify(flows, null, 2));
  else if (flows.length === 0)
    out(
      `No flow is deployed${opts.tenant === undefined ? '' : ` for tenant ${opts.tenant}`}. Deploy one with: svc deploy <file.flow.md> -v <version>`,
    );
  else
    out(formatTable(['TENANT', 'FLOW', 'LATEST', 'HASH', 'CREATED_AT', 'SOAP', 'GRPC', 'SCHEDULE'], flows.map(cells)));
  const unreadable = flows.filter((f) => f.error !== undefined);
  if (unreadable.length > 0)
    throw new ExitError(
      1,
      unreadable.map((f) => `${f.tenant}/${f.flow} version ${f.version}: artifact unreadable: ${f.error}`).join('\n'),
    );
}

function cells(f: FlowSummary): string[] {
  if (f.error !== undefined)
    return [f.tenant, f.flow, f.version, f.hash.slice(0, 12), f.created_at, '?', '?', 'UNREADABLE'];
  return [
    f.tenant,
    f.flow,
    f.version,
    f.hash.slice(0, 12),
    f.created_at,
    f.soap ? 'soap' : '-',
    f.grpc ? 'grpc' : '-',
    f.schedule ?? '-',
  ];
}

export interface FlowsShowOptions extends StoreFlags {
  tenant: string;
  flow: string;
  version?: string;
  json?: boolean;
  format?: DiagramFormat;
}

/** A read of one flow version, its refusals (bad name, unknown flow or version) as exit 1. */
async function readShown<T>(opts: FlowsShowOptions, read: (artifacts: ArtifactsStore) => Promise<T>): Promise<T> {
  try {
    return await withStore(opts, (s) => read(s.artifacts), { readOnly: true });
  } catch (err) {
    if (err instanceof SvcError) throw new ExitError(1, `error: ${err.message}`);
    throw err;
  }
}

export async function flowsShow(opts: FlowsShowOptions): Promise<void> {
  const format = opts.format;
  if (format !== undefined) {
    const { drawing } = await readShown(opts, (a) => flowDiagram(a, opts.tenant, opts.flow, opts.version, format));
    process.stdout.write(drawing);
    return;
  }
  const details: FlowDetails = await readShown(opts, (a) => showFlow(a, opts.tenant, opts.flow, opts.version));
  if (opts.json) {
    out(JSON.stringify(details, null, 2));
    return;
  }
  const s = details.shown;
  out(
    `flow ${details.tenant}/${details.flow}: ${details.versions.length} version${details.versions.length === 1 ? '' : 's'}, oldest first`,
  );
  out(
    formatTable(
      ['VERSION', 'HASH', 'CREATED_AT', 'LATEST'],
      details.versions.map((v) => [v.version, v.hash, v.created_at, v.latest ? 'latest' : '']),
    ),
  );
  out(`\nversion ${s.version}${s.latest ? ' (latest)' : ' (not latest: only the latest version answers)'}`);
  out('front matter (as compiled, defaults filled in):');
  out(indent(stringify(s.front_matter).trimEnd()));
  out('doors:');
  out(
    indent(
      formatTable(
        ['DOOR', 'WHERE'],
        s.doors.map((d) => [d.door, d.detail]),
      ),
    ),
  );
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
}
