/**
 * The Node.js line svc runs on. package.json's `engines` says the same; `npm run setup` brings it
 * from the npm registry when a machine's Node is older (scripts/setup.mjs).
 *
 * Checked at start by the `svc` binary, before anything opens a database: better-sqlite3 13 is a
 * Node-API 10 addon, and on Node 20 (which has no Node-API 10) opening a database ends the process
 * with a segmentation fault rather than an error (better-sqlite3 issue 1514).
 */
export const MIN_NODE_MAJOR = 24;

/** Why svc cannot run on Node `version` (`v20.20.2`), or undefined when it can. */
export function runtimeRefusal(version: string, execPath: string): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1] ?? NaN);
  if (major >= MIN_NODE_MAJOR) return undefined;
  return (
    `svc needs Node.js ${MIN_NODE_MAJOR} or newer; this is Node ${version} (${execPath}). ` +
    `In a checkout, run \`npm run setup\` once (it brings Node ${MIN_NODE_MAJOR} from the npm registry), ` +
    `then start svc with node_modules/.bin/node or through npm (npm start, npx svc).`
  );
}
