/** Use cases behind validate and compile, and deploy's compile step (app/use-cases/deploy.ts publishes): read the flow and its libraries, compile. */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { sha256Hex } from '../../common/digest.js';
import { compileFlow, irToJson, type CompileResult, type LibrarySource } from '../../flow/compile.js';
import type { FlowIR } from '../../ir/types.js';
import { FlowPublicationError, type FlowWarning } from '../../flow/diagnostics.js';
import { SvcError } from '../../common/errors.js';

/** Reads every `*.lib.md` of a directory; the library name is the file name without `.lib.md`. */
export function readLibraries(dir: string | undefined): LibrarySource[] | undefined {
  if (dir === undefined) return undefined;
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((n) => n.endsWith('.lib.md'))
      .sort();
  } catch (err) {
    throw new SvcError('SVC_ERR_INVALID_INPUT', `cannot read the --libs directory ${dir}: ${(err as Error).message}`);
  }
  return names.map((n) => {
    const file = join(dir, n);
    return { name: basename(n, '.lib.md'), file, text: readFileSync(file, 'utf8') };
  });
}

function readSource(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new SvcError('SVC_ERR_INVALID_INPUT', `cannot read ${path}: ${(err as Error).message}`);
  }
}

export interface SourceOptions {
  path: string;
  /** Directory of `*.lib.md` files for `use:`. */
  libs?: string;
}

/** `svc validate`: parse and resolve names only. */
export function validateFile(opts: SourceOptions): CompileResult {
  return compileFlow(readSource(opts.path), { file: opts.path, libs: readLibraries(opts.libs), mode: 'validate' });
}

/** `svc compile`: every check; returns the IR bytes and hash. Stores nothing. */
export function compileFile(opts: SourceOptions): CompileResult {
  return compileFlow(readSource(opts.path), { file: opts.path, libs: readLibraries(opts.libs) });
}

/** A flow compiled for publication: the artifact, its address, and the Markdown kept beside it. */
export interface CompiledFlow {
  readonly ir: FlowIR;
  readonly bytes: string;
  readonly hash: string;
  readonly source: string;
  readonly warnings: FlowWarning[];
}

/**
 * Reads and compiles a flow with every check. With `tenant`, the artifact is published under that
 * tenant instead of the front matter's (`svc dev --tenant`): the IR's tenant is replaced and the
 * bytes and hash are made again; the kept source stays as written. `libraries` (read once by a
 * caller compiling many files) takes the place of reading `libs` again.
 * @throws FlowPublicationError with every diagnostic; SvcError when the file cannot be read
 */
export function compileForPublication(
  opts: SourceOptions & { tenant?: string; libraries?: LibrarySource[] },
): CompiledFlow {
  const source = readSource(opts.path);
  const result = compileFlow(source, { file: opts.path, libs: opts.libraries ?? readLibraries(opts.libs) });
  if (!result.ir || !result.bytes || !result.hash) throw new FlowPublicationError(result.diagnostics, result.warnings);
  if (opts.tenant === undefined || opts.tenant === result.ir.tenant)
    return { ir: result.ir, bytes: result.bytes, hash: result.hash, source, warnings: result.warnings };
  // Spreading keeps the key order, so the bytes stay canonical.
  const ir: FlowIR = { ...result.ir, tenant: opts.tenant };
  const bytes = irToJson(ir);
  return { ir, bytes, hash: sha256Hex(bytes), source, warnings: result.warnings };
}
