/**
 * Says which Node the npm scripts run on (npm test and npm start begin with it), and stops with
 * what to do when it is older than the project's line.
 */
import { relative } from 'node:path';
import { ROOT, WANTED_MAJOR, majorOf } from './runtime.mjs';

const where = relative(ROOT, process.execPath).startsWith('..') ? process.execPath : relative(ROOT, process.execPath);
if (majorOf(process.versions.node) < WANTED_MAJOR) {
  console.error(
    `svc needs Node ${WANTED_MAJOR}; this is Node ${process.version} (${where}). Run \`npm run setup\` first: it brings Node ${WANTED_MAJOR} from the npm registry.`,
  );
  process.exit(1);
}
console.log(`running on Node ${process.version} (${where})`);
