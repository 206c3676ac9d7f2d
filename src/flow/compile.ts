/** The flow compiler: source text (+ libraries) -> checked IR, its canonical JSON bytes and SHA-256 address. Pure. */
import { sha256Hex } from '../common/digest.js';
import type { FaultIR, FlowIR, StepIR } from '../ir/types.js';
import { Checker } from './checker.js';
import { compileStep, type StepContext } from './compile-step.js';
import {
  CONFIG_CHECKS,
  FlowErrorCode,
  type FlowDiagnostic,
  type FlowWarning,
  type OnError,
  type OnWarning,
} from './diagnostics.js';
import { compileFrontMatter } from './front-matter.js';
import { parseFlowDoc, type FlowDoc, type StepNode } from './parse.js';

/** A `*.lib.md` file: its name is the file name without `.lib.md`. */
export interface LibrarySource {
  name: string;
  file: string;
  text: string;
}

export interface CompileOptions {
  /** The file name printed in diagnostics. @default "<input>" */
  file?: string;
  /** Libraries `use: <library>/<step>` may name (the `--libs` directory, read by the caller). */
  libs?: readonly LibrarySource[];
  /** `validate` runs the parse and name checks only; `compile` runs every check. @default "compile" */
  mode?: 'validate' | 'compile';
  /** Receives each diagnostic as it is found (all are also returned). */
  onError?: OnError;
  /** Receives each warning as it is found (all are also returned). */
  onWarning?: OnWarning;
}

export interface CompileResult {
  /** Present only when there are no diagnostics. */
  ir?: FlowIR;
  /** The canonical IR JSON (compact, stable key order): the artifact bytes. */
  bytes?: string;
  /** Hex SHA-256 of `bytes`: the artifact's content address. */
  hash?: string;
  diagnostics: FlowDiagnostic[];
  /** Conditions that do not stop publication (both modes report them); the IR is present if there are no diagnostics. */
  warnings: FlowWarning[];
}

/** Compiles one flow file. Never throws for bad input: every problem is a diagnostic. */
export function compileFlow(text: string, opts: CompileOptions = {}): CompileResult {
  const file = opts.file ?? '<input>';
  const mode = opts.mode ?? 'compile';
  const diagnostics: FlowDiagnostic[] = [];
  const onError: OnError = (d) => {
    if (mode === 'validate' && CONFIG_CHECKS.has(d.code)) return;
    diagnostics.push(d);
    opts.onError?.(d);
  };
  const warnings: FlowWarning[] = [];
  const onWarning: OnWarning = (w) => {
    warnings.push(w);
    opts.onWarning?.(w);
  };
  const doc = parseFlowDoc(text, file, onError);
  const ir = lower(doc, opts.libs ?? [], onError, onWarning, opts.libs !== undefined);
  if (diagnostics.length > 0 || !ir) return { diagnostics, warnings };
  const bytes = irToJson(ir);
  return { ir, bytes, hash: sha256Hex(bytes), diagnostics, warnings };
}

/** The canonical artifact bytes of an IR: compact JSON in the order the compiler built the objects. */
export function irToJson(ir: FlowIR): string {
  return JSON.stringify(ir);
}

function lower(
  doc: FlowDoc,
  libs: readonly LibrarySource[],
  onError: OnError,
  onWarning: OnWarning,
  libsGiven: boolean,
): FlowIR | undefined {
  const chk = new Checker(doc.file, onError, onWarning);
  const head = compileFrontMatter(doc, chk);
  const sc: StepContext = {
    chk,
    flowEffects: doc.frontMatter === undefined ? undefined : new Set(head.effects),
    snapshots: new Set(),
  };
  const seen = new Map<string, number>();
  const libraries = new LibraryCache(libs, onError, libsGiven);

  const compileOne = (node: StepNode): StepIR => {
    const valid = chk.name({ key: 'step', value: node.name, line: node.line }, node.name || '(unnamed)', 'step name');
    if (valid !== undefined) {
      const first = seen.get(node.name);
      if (first !== undefined) chk.error(FlowErrorCode.DUPLICATE_STEP, node, node.name, { name: node.name, first });
      else seen.set(node.name, node.line);
    }
    const expanded = libraries.expand(node, chk);
    return compileStep(expanded.node, { ...sc, use: expanded.use });
  };

  const steps = doc.steps.map(compileOne);
  if (doc.steps.length === 0) chk.error(FlowErrorCode.NO_STEPS, { line: 1 }, 'front matter');

  let fault: FaultIR | undefined;
  const [first, ...extra] = doc.faults;
  for (const f of extra) chk.error(FlowErrorCode.MULTIPLE_FAULT_SECTIONS, f, f.name, { first: first!.line });
  if (first) {
    const nodes =
      first.body.keys.length > 0 || first.body.fences.length > 0 ? [first.body, ...first.steps] : first.steps;
    fault = { name: first.name, line: first.line, steps: nodes.map(compileOne) };
  }
  if (!head.complete) return undefined;
  const ir: FlowIR = { ...head.fields, steps, fault };
  return ir;
}

/** Parses each library once and expands `use: <lib>/<step>` into a step node. */
class LibraryCache {
  readonly #byName = new Map<string, LibrarySource>();
  readonly #parsed = new Map<string, FlowDoc>();

  constructor(
    libs: readonly LibrarySource[],
    readonly onError: OnError,
    readonly libsGiven: boolean,
  ) {
    for (const l of libs) this.#byName.set(l.name, l);
  }

  expand(node: StepNode, chk: Checker): { node: StepNode; use?: string } {
    const useEntry = node.keys.find((k) => k.key === 'use');
    if (!useEntry) return { node };
    const ref = typeof useEntry.value === 'string' ? /^([^/\s]+)\/([^/\s]+)$/.exec(useEntry.value.trim()) : null;
    if (!ref) {
      chk.error(FlowErrorCode.BAD_USE_REFERENCE, useEntry, node.name, { value: JSON.stringify(useEntry.value) });
      return { node: { ...node, keys: node.keys.filter((k) => k !== useEntry) } };
    }
    const [, libName, stepName] = ref as unknown as [string, string, string];
    const lib = this.#load(libName);
    const own = { ...node, keys: node.keys.filter((k) => k !== useEntry) };
    if (!lib) {
      chk.error(FlowErrorCode.UNKNOWN_LIBRARY, useEntry, node.name, {
        lib: libName,
        hint: this.libsGiven ? '' : ' (pass --libs <dir>)',
      });
      return { node: own };
    }
    const libStep = lib.steps.find((s) => s.name === stepName);
    if (!libStep) {
      chk.error(FlowErrorCode.UNKNOWN_LIBRARY_STEP, useEntry, node.name, { lib: libName, step: stepName });
      return { node: own };
    }
    const nested = libStep.keys.find((k) => k.key === 'use');
    if (nested) chk.error(FlowErrorCode.NESTED_USE, { line: nested.line, file: lib.file }, node.name);
    // Keys written beside `use:` override the library's; a fence in the step replaces the library's fence of that kind.
    const ownKeys = new Set(own.keys.map((k) => k.key));
    const ownFences = new Set(own.fences.map((f) => f.kind));
    const merged: StepNode = {
      name: node.name,
      line: node.line,
      keys: [
        ...libStep.keys.filter((k) => !ownKeys.has(k.key) && k.key !== 'use').map((k) => ({ ...k, file: lib.file })),
        ...own.keys,
      ],
      fences: [
        ...libStep.fences.filter((f) => !ownFences.has(f.kind)).map((f) => ({ ...f, file: lib.file })),
        ...own.fences,
      ],
    };
    return { node: merged, use: `${libName}/${stepName}` };
  }

  #load(name: string): FlowDoc | undefined {
    const cached = this.#parsed.get(name);
    if (cached) return cached;
    const src = this.#byName.get(name);
    if (!src) return undefined;
    const doc = parseFlowDoc(src.text, src.file, this.onError, { requireFrontMatter: false });
    this.#parsed.set(name, doc);
    return doc;
  }
}
