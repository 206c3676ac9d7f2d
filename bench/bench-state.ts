/** The sandbox the `npm run bench` sections start from, written through the `svc` CLI as an operator would. */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { QUOTE_FLOW } from './quote-flow.js';

/** Runs one `svc` command (dist/src/main.js) and returns its stdout; throws on a non-zero exit. */
export function svcCli(svcBin: string, env: NodeJS.ProcessEnv, args: readonly string[]): string {
  return execFileSync(process.execPath, [svcBin, ...args], { env, encoding: 'utf8' });
}

/**
 * Tenant `bench`, one API key of it and the flow bench/quote deployed at 1.0.0 in the state
 * directory of `db` (created when missing).
 * @returns the API key
 */
export function seedBenchState(svcBin: string, env: NodeJS.ProcessEnv, db: string): string {
  svcCli(svcBin, env, ['tenant', 'create', '--id', 'bench', '--display-name', 'Bench', '--db', db]);
  const keyOut = svcCli(svcBin, env, ['keys', 'create', '--tenant', 'bench', '--label', 'bench', '--db', db]);
  const key = /svk_[0-9a-f]{32}/.exec(keyOut)?.[0];
  if (!key) throw new Error(`no key in: ${keyOut}`);
  deployFlow(svcBin, env, db, 'quote.flow.md', QUOTE_FLOW);
  return key;
}

/** Writes a flow's source beside the registry and deploys it at 1.0.0. */
export function deployFlow(svcBin: string, env: NodeJS.ProcessEnv, db: string, fileName: string, source: string): void {
  const path = join(dirname(db), fileName);
  writeFileSync(path, source);
  svcCli(svcBin, env, ['deploy', path, '-v', '1.0.0', '--db', db]);
}
