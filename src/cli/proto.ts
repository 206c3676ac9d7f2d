/** `svc proto deploy|list|show`: publish and inspect the protobuf descriptors the gRPC door answers with. */
import { Command, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { deployDescriptor, listDescriptors, showDescriptor, type ServiceInfo } from '../app/use-cases/proto.js';
import { ExitError, SvcError } from '../common/errors.js';
import { statePaths } from '../common/paths.js';
import { addStoreOptions, nameArg, type StoreFlags, tenantOption } from './options.js';
import type { OpenedStore } from '../storage/index.js';
import type { DescriptorsStore } from '../store/contracts/index.js';
import { registryLocation, withStore } from './stores.js';

/** The descriptors, or undefined when the state directory has no registry (a read or a refusal must not create it). */
function descriptorsOf(s: OpenedStore): DescriptorsStore | undefined {
  return s.has('registry') ? s.descriptors : undefined;
}

export function registerProto(program: Command): void {
  const proto = program
    .command('proto')
    .description('publish and inspect protobuf descriptors (FileDescriptorSet) for the gRPC door');
  proto
    .command('deploy <path>')
    .description(
      'publish a FileDescriptorSet built with imports (protoc --include_imports --descriptor_set_out=<path>)',
    )
    .addOption(tenantOption('tenant (must be registered and enabled)', { required: true }))
    .requiredOption('--name <name>', 'descriptor name', nameArg('descriptor name'))
    .requiredOption('--version <v>', 'version label; publishing a version twice is an error')
    .addOption(
      new Option(
        '--latest',
        'move the latest pointer to this version (changes the wire format of every gRPC flow of the tenant)',
      ).default(false),
    )
    .action(protoDeploy);
  proto
    .command('list')
    .description('list descriptor versions: name, version, hash, latest, deployed')
    .addOption(tenantOption('tenant', { required: true }))
    .option('--json', 'print JSON for scripts')
    .action(protoList);
  proto
    .command('show')
    .description('list services and methods with their streaming kind (default version: latest)')
    .addOption(tenantOption('tenant', { required: true }))
    .requiredOption('--name <name>', 'descriptor name', nameArg('descriptor name'))
    .option('--version <v>', 'version label (default: latest)')
    .option('--json', 'print one JSON object: the descriptor version and its services with their methods')
    .action(protoShow);
  for (const c of proto.commands) addStoreOptions(c);
}

interface DeployFlags extends StoreFlags {
  tenant: string;
  name: string;
  version: string;
  latest: boolean;
}

export async function protoDeploy(path: string, flags: DeployFlags): Promise<void> {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new ExitError(
      1,
      `error: cannot read descriptor set ${path}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  await withStore(flags, async (s) => {
    const store = descriptorsOf(s);
    if (store === undefined) {
      throw new ExitError(
        1,
        `error: tenant "${flags.tenant}" is not registered; register it with \`svc tenant create --id ${flags.tenant} --display-name <name>\` (no registry at ${statePaths(flags.db).registryDb} yet)`,
      );
    }
    const r = await refusing(() =>
      deployDescriptor(store, {
        tenant: flags.tenant,
        name: flags.name,
        version: flags.version,
        bytes,
        latest: flags.latest,
      }),
    );
    const lines = [
      `descriptor: ${flags.tenant}/${flags.name}`,
      `version:    ${r.info.version}`,
      `hash:       ${r.info.hash}`,
      `size:       ${r.info.sizeBytes} bytes`,
      ...r.services.map(
        (s) => `service:    ${s.fullName} (${s.methods.length} method${s.methods.length === 1 ? '' : 's'})`,
      ),
      flags.latest
        ? `latest:     ${r.info.version} (moved; every gRPC flow of tenant ${flags.tenant} now uses it)`
        : `latest:     unchanged (${r.latestVersion ?? 'no version is latest yet'}); pass --latest to move it`,
      `db:         ${registryLocation(flags)}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  });
}

export async function protoList(flags: { tenant: string; json?: boolean } & StoreFlags): Promise<void> {
  const rows = await withStore(flags, async (s) => {
    const store = descriptorsOf(s);
    return store === undefined ? [] : listDescriptors(store, flags.tenant);
  });
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify(
        rows.map((r) => ({
          name: r.name,
          version: r.version,
          hash: r.hash,
          size_bytes: r.sizeBytes,
          latest: r.latest,
          deployed_at: r.deployedAt,
        })),
        null,
        2,
      )}\n`,
    );
    return;
  }
  if (rows.length === 0) {
    process.stdout.write(`No descriptors for tenant ${flags.tenant}.\n`);
    return;
  }
  const table = [
    ['NAME', 'VERSION', 'HASH', 'LATEST', 'DEPLOYED'],
    ...rows.map((r) => [r.name, r.version, r.hash, r.latest ? 'yes' : '', r.deployedAt]),
  ];
  process.stdout.write(formatTable(table));
}

export async function protoShow(
  flags: { tenant: string; name: string; version?: string; json?: boolean } & StoreFlags,
): Promise<void> {
  await withStore(flags, async (s) => {
    const store = descriptorsOf(s);
    if (store === undefined)
      throw new ExitError(
        1,
        `error: descriptor ${flags.tenant}/${flags.name} not found (no registry at ${statePaths(flags.db).registryDb})`,
      );
    const shown = await refusing(() => showDescriptor(store, flags.tenant, flags.name, flags.version));
    const i = shown.info;
    if (flags.json) {
      const info = {
        tenant: i.tenant,
        name: i.name,
        version: i.version,
        hash: i.hash,
        size_bytes: i.sizeBytes,
        latest: i.latest,
        deployed_at: i.deployedAt,
      };
      process.stdout.write(`${JSON.stringify({ ...info, services: shown.services.map(serviceJson) }, null, 2)}\n`);
      return;
    }
    const lines = [
      `descriptor ${i.tenant}/${i.name} version ${i.version}${i.latest ? ' (latest)' : ''}`,
      `hash ${i.hash}, ${i.sizeBytes} bytes, deployed ${i.deployedAt}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n${formatServices(shown.services)}`);
    process.stdout.write('Only unary and server-streaming methods can be called through the gRPC door.\n');
  });
}

/** A service with its methods, message types by full name (no leading dot). */
function serviceJson(s: ServiceInfo): Record<string, unknown> {
  const typeName = (t: { fullName: string }) => t.fullName.replace(/^\./, '');
  return {
    full_name: s.fullName,
    methods: s.methods.map((m) => ({
      full_name: m.fullName,
      name: m.name,
      kind: m.kind,
      callable: m.callable,
      request_type: typeName(m.requestType),
      response_type: typeName(m.responseType),
    })),
  };
}

function formatServices(services: readonly ServiceInfo[]): string {
  let out = '';
  for (const s of services) {
    out += `\nservice ${s.fullName}\n`;
    const rows = s.methods.map((m) => [`  ${m.fullName}`, m.kind, m.callable ? 'callable' : 'not callable']);
    out += formatTable(rows);
  }
  return `${out}\n`;
}

/** A refusal of the use case (unknown tenant, duplicate version, bad descriptor) becomes exit 1 with its message. */
async function refusing<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw err instanceof SvcError ? new ExitError(1, `error: ${err.message}`) : err;
  }
}

function formatTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return (
    rows.map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]!))).join('  ')).join('\n') +
    '\n'
  );
}
