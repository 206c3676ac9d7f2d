/** Protobuf descriptor use cases (deploy, list, show) and the one FileDescriptorSet reader the gRPC door shares. */
import protobuf from 'protobufjs';
import descriptorExt from 'protobufjs/ext/descriptor/index.js';
import { isoNow } from '../../common/clock.js';
import { sha256Hex } from '../../common/digest.js';
import { SvcError } from '../../common/errors.js';
import type { DescriptorsStore, DescriptorInfo } from '../../store/contracts/index.js';

/** How a method streams; only `unary` and `server-streaming` can be called through the gRPC door. */
export type StreamingKind = 'unary' | 'server-streaming' | 'client-streaming' | 'bidi-streaming';

export interface MethodInfo {
  /** `pkg.Service/Method`, the form a flow's `grpc_method` uses. */
  readonly fullName: string;
  readonly name: string;
  readonly kind: StreamingKind;
  readonly callable: boolean;
  readonly requestType: protobuf.Type;
  readonly responseType: protobuf.Type;
}

export interface ServiceInfo {
  /** `pkg.Service`. */
  readonly fullName: string;
  readonly methods: readonly MethodInfo[];
}

export interface ParsedDescriptorSet {
  readonly root: protobuf.Root;
  readonly files: readonly string[];
  readonly services: readonly ServiceInfo[];
}

/** Largest descriptor set accepted, in bytes. @default 16 MiB */
export const MAX_DESCRIPTOR_BYTES = 16 * 1024 * 1024;

const REBUILD_HINT = 'rebuild it with `protoc --include_imports --descriptor_set_out=<file> <your.proto>`';

/** A FileDescriptorSet whose files import files it does not carry. */
export class MissingImportError extends SvcError {
  constructor(readonly missing: ReadonlyArray<{ file: string; imports: string }>) {
    const list = missing.map((m) => `"${m.file}" imports "${m.imports}"`).join('; ');
    super(
      'SVC_ERR_INVALID_INPUT',
      `descriptor set is missing imports: ${list}, which the set does not contain; ${REBUILD_HINT}`,
    );
    this.name = 'MissingImportError';
  }
}

type DescriptorSetMessage = protobuf.Message & { file?: Array<{ name?: string; dependency?: string[] }> };
const fromDescriptor = (protobuf.Root as unknown as { fromDescriptor(set: unknown): protobuf.Root }).fromDescriptor;

/**
 * Reads a binary FileDescriptorSet (as written by `protoc --include_imports --descriptor_set_out`):
 * checks that every import is inside the set and every type resolves, and lists its services.
 */
export function parseDescriptorSet(bytes: Uint8Array): ParsedDescriptorSet {
  let set: DescriptorSetMessage;
  try {
    set = descriptorExt.FileDescriptorSet.decode(bytes) as DescriptorSetMessage;
  } catch (cause) {
    throw new SvcError('SVC_ERR_INVALID_INPUT', `not a binary FileDescriptorSet (${errText(cause)}); ${REBUILD_HINT}`, {
      cause,
    });
  }
  const files = (set.file ?? []).map((f) => f.name ?? '');
  if (files.length === 0)
    throw new SvcError('SVC_ERR_INVALID_INPUT', `the descriptor set holds no files; ${REBUILD_HINT}`);
  const present = new Set(files);
  const missing = (set.file ?? []).flatMap((f) =>
    (f.dependency ?? []).filter((d) => !present.has(d)).map((d) => ({ file: f.name ?? '', imports: d })),
  );
  if (missing.length > 0) throw new MissingImportError(missing);
  let root: protobuf.Root;
  try {
    root = fromDescriptor(set);
    root.resolveAll();
  } catch (cause) {
    // A type defined nowhere in the set is the same mistake as a missing import.
    throw new SvcError('SVC_ERR_INVALID_INPUT', `descriptor set does not resolve: ${errText(cause)}; ${REBUILD_HINT}`, {
      cause,
    });
  }
  return { root, files, services: collectServices(root) };
}

function collectServices(ns: protobuf.NamespaceBase): ServiceInfo[] {
  const out: ServiceInfo[] = [];
  for (const child of ns.nestedArray) {
    if (child instanceof protobuf.Service) {
      const fullName = child.fullName.replace(/^\./, '');
      out.push({ fullName, methods: child.methodsArray.map((m) => methodInfo(fullName, m)) });
    }
    if (child instanceof protobuf.Namespace || child instanceof protobuf.Type) out.push(...collectServices(child));
  }
  return out.sort((a, b) => a.fullName.localeCompare(b.fullName));
}

function methodInfo(service: string, m: protobuf.Method): MethodInfo {
  const kind: StreamingKind = m.requestStream
    ? m.responseStream
      ? 'bidi-streaming'
      : 'client-streaming'
    : m.responseStream
      ? 'server-streaming'
      : 'unary';
  return {
    fullName: `${service}/${m.name}`,
    name: m.name,
    kind,
    callable: kind === 'unary' || kind === 'server-streaming',
    requestType: m.resolvedRequestType!,
    responseType: m.resolvedResponseType!,
  };
}

export interface DeployDescriptorInput {
  readonly tenant: string;
  readonly name: string;
  readonly version: string;
  readonly bytes: Buffer;
  /** Move `latest` to this version. */
  readonly latest: boolean;
}

export interface DeployDescriptorResult {
  readonly info: DescriptorInfo;
  readonly services: readonly ServiceInfo[];
  /** The latest version after the deploy (undefined: none is marked latest yet). */
  readonly latestVersion: string | undefined;
}

/**
 * Publishes a descriptor version. Refuses (changing nothing) an unregistered or disabled tenant,
 * a set missing its imports, a bad version label and a version published before.
 */
export async function deployDescriptor(
  repo: DescriptorsStore,
  input: DeployDescriptorInput,
): Promise<DeployDescriptorResult> {
  checkVersionLabel(input.version);
  const status = await repo.tenantStatus(input.tenant);
  if (status === undefined) {
    throw new SvcError(
      'SVC_ERR_TENANT_NOT_FOUND',
      `tenant "${input.tenant}" is not registered; register it with \`svc tenant create --id ${input.tenant} --display-name <name>\``,
    );
  }
  if (status !== 'active') {
    throw new SvcError(
      'SVC_ERR_TENANT_NOT_FOUND',
      `tenant "${input.tenant}" is disabled; enable it with \`svc tenant enable --id ${input.tenant}\``,
    );
  }
  if (input.bytes.length > MAX_DESCRIPTOR_BYTES) {
    throw new SvcError(
      'SVC_ERR_PAYLOAD_TOO_LARGE',
      `descriptor set is ${input.bytes.length} bytes; the limit is ${MAX_DESCRIPTOR_BYTES}`,
    );
  }
  const parsed = parseDescriptorSet(input.bytes);
  if (parsed.services.length === 0) {
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      'the descriptor set defines no service; a gRPC flow needs a service method to answer',
    );
  }
  const hash = sha256Hex(input.bytes);
  await repo.insert({
    tenant: input.tenant,
    name: input.name,
    version: input.version,
    hash,
    bytes: input.bytes,
    deployedAt: isoNow(),
    makeLatest: input.latest,
  });
  const info = (await repo.list(input.tenant)).find((d) => d.name === input.name && d.version === input.version)!;
  return { info, services: parsed.services, latestVersion: await repo.latestVersion(input.tenant, input.name) };
}

/** Every descriptor version of a tenant. */
export async function listDescriptors(repo: DescriptorsStore, tenant: string): Promise<DescriptorInfo[]> {
  return repo.list(tenant);
}

export interface ShownDescriptor {
  readonly info: DescriptorInfo;
  readonly services: readonly ServiceInfo[];
}

/** One descriptor version (default: latest) with its services and methods. */
export async function showDescriptor(
  repo: DescriptorsStore,
  tenant: string,
  name: string,
  version?: string,
): Promise<ShownDescriptor> {
  const stored = await repo.get(tenant, name, version);
  if (stored === undefined) {
    const what =
      version === undefined
        ? `no latest version of descriptor ${tenant}/${name}`
        : `descriptor ${tenant}/${name} version ${version} not found`;
    throw new SvcError('SVC_ERR_NOT_FOUND', `${what}; see \`svc proto list --tenant ${tenant}\``);
  }
  if (sha256Hex(stored.bytes) !== stored.hash) {
    throw new SvcError(
      'SVC_ERR_INTEGRITY',
      `descriptor ${tenant}/${name} version ${stored.version} does not match its hash ${stored.hash}`,
    );
  }
  const { bytes: _bytes, ...info } = stored;
  return { info, services: parseDescriptorSet(stored.bytes).services };
}

/** A version is a free text label: 1 to 128 bytes, no whitespace or control characters. */
function checkVersionLabel(version: string): void {
  if (version.length === 0 || Buffer.byteLength(version) > 128 || /[\s\p{Cc}]/u.test(version)) {
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `version "${version}" must be 1 to 128 bytes without spaces or control characters (e.g. 1.0.0)`,
    );
  }
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
