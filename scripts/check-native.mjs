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
import { ROOT, WANTED_MAJOR, majorOf } from './runtime.mjs';

if (majorOf(process.versions.node) < WANTED_MAJOR) {
  console.warn(
    `postinstall: this is Node ${process.version}, and this platform has no Node ${WANTED_MAJOR} package in the lockfile; install Node ${WANTED_MAJOR} to run svc`,
  );
  process.exit(0);
}
const r = spawnSync(
  process.execPath,
  ['-e', "new (require('better-sqlite3'))(':memory:').prepare('SELECT sqlite_version() AS v').get().v"],
  { cwd: ROOT, encoding: 'utf8' },
);
if (r.status !== 0) {
  const why = (r.stderr.match(/Error[^\n]*/) ?? [`exit ${r.status ?? r.signal}`])[0];
  console.error(
    `postinstall: better-sqlite3 does not load on Node ${process.version} (${process.platform}-${process.arch}): ${why}`,
  );
  process.exit(1);
}
console.log(`postinstall: svc runs on Node ${process.version} (${process.execPath}); better-sqlite3 loads`);
