/**
 * postinstall: says on which Node the project will run (node_modules/.bin/node, which npm puts first
 * on every script's PATH) and checks that better-sqlite3, the one native addon, loads on it.
 *
 * better-sqlite3 13 is a Node-API addon whose package carries prebuilt binaries for Linux (glibc and
 * musl), macOS and Windows on x64 and arm64; Node-API keeps one binary valid across Node versions
 * (from 22.14 on), so nothing is compiled here, and nothing needs a Node's headers. It can still
 * fail on a platform without a prebuilt binary: say so plainly rather than at the first request.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ROOT, WANTED_MAJOR, majorOf, platformPackage } from './runtime.mjs';

/** The Node the check runs on: this one when it is new enough, else the package's own build (an installed package run by an older npm). */
function nodeToCheck() {
  if (majorOf(process.versions.node) >= WANTED_MAJOR) return process.execPath;
  try {
    const home = dirname(createRequire(join(ROOT, 'package.json')).resolve(`${platformPackage()}/package.json`));
    const bin = join(home, 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
    if (existsSync(bin)) return bin;
  } catch {
    // not installed for this platform: said below
  }
  return undefined;
}

const node = nodeToCheck();
if (node === undefined) {
  console.warn(
    `postinstall: this is Node ${process.version}, and no Node ${WANTED_MAJOR} build for ${process.platform}-${process.arch} was installed beside svc; install Node ${WANTED_MAJOR} to run svc`,
  );
  process.exit(0);
}
const r = spawnSync(
  node,
  ['-e', "new (require('better-sqlite3'))(':memory:').prepare('SELECT sqlite_version() AS v').get().v"],
  { cwd: ROOT, encoding: 'utf8' },
);
if (r.status !== 0) {
  const why = (r.stderr.match(/Error[^\n]*/) ?? [`exit ${r.status ?? r.signal}`])[0];
  console.error(`postinstall: better-sqlite3 does not load on ${node} (${process.platform}-${process.arch}): ${why}`);
  process.exit(1);
}
const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
console.log(`postinstall: svc runs on Node ${version} (${node}); better-sqlite3 loads`);
