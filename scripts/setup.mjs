/**
 * `npm run setup`: installs the project's dependencies on Node.js 24, whatever Node runs npm.
 *
 * - On Node 24 or newer: `npm ci` with it, nothing else.
 * - On an older Node (these machines ship Node 20): the Node 24 the lockfile pins is brought from
 *   the npm registry into .runtime/ (once; about 50 MB), then npm itself runs on it for `npm ci`.
 *   So no package sees an older engine, and native addons (better-sqlite3) are compiled for Node
 *   24 against its own headers: `nodedir` is set to them, since a machine's npm configuration may
 *   name another Node's headers (these machines set nodedir=/usr, Node 20's).
 *
 * Afterwards every npm script runs on node_modules/.bin/node (the `node` dependency, the same
 * version), whatever `node` the shell finds.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, WANTED_MAJOR, headersDirOf, majorOf, npmCli, pinnedNodeVersion, platformPackage } from './runtime.mjs';

function run(execPath, args, env) {
  const r = spawnSync(execPath, args, { cwd: ROOT, stdio: 'inherit', env });
  if (r.error) throw r.error;
  if (r.status !== 0) process.exit(r.status ?? 1);
}

/** Node `version` for this platform in .runtime/, fetched from the npm registry when missing. */
function bringNode(version) {
  const pkg = platformPackage();
  const dir = join(ROOT, '.runtime', `${pkg}-${version}`);
  const home = join(dir, 'node_modules', pkg);
  const bin = join(home, 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
  if (!existsSync(bin)) {
    console.log(`setup: bringing Node ${version} from the npm registry (${pkg}@${version}) into .runtime/`);
    run(process.execPath, [
      npmCli(),
      'install',
      '--prefix',
      dir,
      '--no-save',
      '--no-package-lock',
      `${pkg}@${version}`,
    ]);
  }
  return { bin, home };
}

const env = { ...process.env };
let node = process.execPath;
let version = process.versions.node;
if (majorOf(version) >= WANTED_MAJOR) {
  console.log(`setup: installing on this machine's Node ${process.version}`);
} else {
  console.log(`setup: this machine's Node is ${process.version}; the project runs on Node ${WANTED_MAJOR}`);
  version = pinnedNodeVersion();
  const brought = bringNode(version);
  node = brought.bin;
  env.PATH = `${join(brought.home, 'bin')}${process.platform === 'win32' ? ';' : ':'}${env.PATH ?? ''}`;
  console.log(`setup: installing with npm running on Node ${version} (${node})`);
}
const headers = headersDirOf(node);
if (headers !== undefined) env.npm_config_nodedir = headers;
run(node, [npmCli(), 'ci'], env);
const linked = join(ROOT, 'node_modules', '.bin', process.platform === 'win32' ? 'node.cmd' : 'node');
const scriptsNode = existsSync(linked)
  ? `node_modules/.bin/node (Node ${spawnSync(linked, ['--version'], { encoding: 'utf8' }).stdout.trim()})`
  : `this machine's Node ${process.version} (the npm registry has no Node package for ${process.platform}-${process.arch})`;
console.log(`setup: done; npm start, npm test and every npm script run on ${scriptsNode}`);
