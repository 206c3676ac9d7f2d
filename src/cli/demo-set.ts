/**
 * Which demo flows `svc seed` and `svc simulate` read. A directory given with --demo-dir is read as
 * given (and a missing one is an error, as the spec says); without it, `./examples/demo` of the
 * working directory when it exists (the spec's default: a checkout, or a user's own copy), and
 * otherwise the demo set installed with svc, so both commands work from any directory.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The spec's default, relative to the working directory. */
export const DEFAULT_DEMO_DIR = './examples/demo';

/** Says where the default comes from, for the commands' help. */
export const DEMO_DIR_DEFAULT_TEXT = `${DEFAULT_DEMO_DIR} when it exists, else the demo set installed with svc`;

export interface DemoSet {
  /** Absolute path of the directory read. */
  readonly dir: string;
  /** Why this directory, in words for the output: "--demo-dir", "./examples/demo", "installed with svc". */
  readonly from: string;
}

/**
 * The demo set shipped in the package: `examples/demo` at the package's root, three levels above
 * this module once built (dist/src/cli/demo-set.js), in a checkout and in an installed package alike.
 */
export function installedDemoDir(): string {
  return fileURLToPath(new URL('../../../examples/demo', import.meta.url));
}

const isDir = (path: string): boolean => existsSync(path) && statSync(path).isDirectory();

/** The directory to read: `given` when there is one, else the working directory's default, else the installed set. */
export function demoSet(given: string | undefined, cwd: string = process.cwd()): DemoSet {
  if (given !== undefined) return { dir: resolve(cwd, given), from: '--demo-dir' };
  const local = resolve(cwd, DEFAULT_DEMO_DIR);
  if (isDir(local)) return { dir: local, from: DEFAULT_DEMO_DIR };
  return { dir: installedDemoDir(), from: 'installed with svc' };
}
