/**
 * Resolves `pkg.Service/Method` across a tenant's latest descriptors, cached until the registry
 * changes: one read of the registry file's change counter per call tells whether a `latest` moved
 * in any process.
 */
import { sha256Hex } from '../../common/digest.js';
import { parseDescriptorSet, type MethodInfo, type ParsedDescriptorSet } from '../../app/use-cases/proto.js';
import { IntegrityError } from '../../common/errors.js';
import type { StoredDescriptor } from '../../store/contracts/index.js';

/** What the catalog reads: the descriptors repo (src/store/contracts/descriptors.ts) fits. */
export interface DescriptorSource {
  latestOfTenant(tenant: string): StoredDescriptor[];
  /** Changes whenever a descriptor or its latest pointer may have changed. */
  changeToken(): string;
}

export interface ResolvedMethod extends MethodInfo {
  /** The descriptor version that defines the method: (name, version, hash). */
  readonly descriptor: { readonly name: string; readonly version: string; readonly hash: string };
}

/** Parsed descriptor sets kept by hash (bytes never change under a hash). @default 64 */
const MAX_PARSED = 64;

export class MethodCatalog {
  readonly #source: DescriptorSource;
  readonly #onProblem: (message: string) => void;
  #token: string | undefined;
  readonly #byTenant = new Map<string, Map<string, ResolvedMethod>>();
  readonly #parsed = new Map<string, ParsedDescriptorSet>();

  /** `onProblem` hears about descriptors that cannot be used (integrity or parse failures). */
  constructor(source: DescriptorSource, onProblem: (message: string) => void = () => {}) {
    this.#source = source;
    this.#onProblem = onProblem;
  }

  /** The method as the tenant's latest descriptors define it now, or undefined. */
  resolve(tenant: string, fullName: string): ResolvedMethod | undefined {
    return this.#methods(tenant).get(fullName);
  }

  /**
   * The method a flow without `grpc_method` answers: the one named like the flow, compared without
   * case, `-` and `_` (flow `say-hello` answers `SayHello`). When several services define such a
   * method, the descriptor deployed last wins, and within it the service first by full name.
   */
  namedLike(tenant: string, flow: string): ResolvedMethod | undefined {
    const wanted = comparable(flow);
    for (const m of this.#methods(tenant).values()) if (comparable(m.name) === wanted) return m;
    return undefined;
  }

  #methods(tenant: string): Map<string, ResolvedMethod> {
    this.#checkFresh();
    let methods = this.#byTenant.get(tenant);
    if (methods === undefined) {
      methods = this.#load(tenant);
      this.#byTenant.set(tenant, methods);
    }
    return methods;
  }

  #checkFresh(): void {
    const token = this.#source.changeToken();
    if (token !== this.#token) {
      this.#token = token;
      this.#byTenant.clear();
    }
  }

  /**
   * Newest deployment first, then services by full name (parseDescriptorSet sorts them), then
   * methods as declared: when two latest descriptors of a tenant define the same method, the one
   * deployed last wins (documented in docs/grpc.md).
   */
  #load(tenant: string): Map<string, ResolvedMethod> {
    const out = new Map<string, ResolvedMethod>();
    for (const d of this.#source.latestOfTenant(tenant)) {
      let parsed: ParsedDescriptorSet;
      try {
        parsed = this.#parse(d);
      } catch (err) {
        this.#onProblem(
          `descriptor ${tenant}/${d.name} version ${d.version} is unusable: ${err instanceof Error ? err.message : String(err)}`,
        );
        continue;
      }
      for (const s of parsed.services) {
        for (const m of s.methods) {
          if (!out.has(m.fullName))
            out.set(m.fullName, { ...m, descriptor: { name: d.name, version: d.version, hash: d.hash } });
        }
      }
    }
    return out;
  }

  #parse(d: StoredDescriptor): ParsedDescriptorSet {
    const cached = this.#parsed.get(d.hash);
    if (cached !== undefined) return cached;
    if (sha256Hex(d.bytes) !== d.hash) throw new IntegrityError(`bytes do not match hash ${d.hash}`);
    const parsed = parseDescriptorSet(d.bytes);
    if (this.#parsed.size >= MAX_PARSED) this.#parsed.delete(this.#parsed.keys().next().value!);
    this.#parsed.set(d.hash, parsed);
    return parsed;
  }
}

/** A name as `namedLike` compares it: lowercase, without `-` and `_`. */
function comparable(name: string): string {
  return name.toLowerCase().replace(/[-_]/g, '');
}
