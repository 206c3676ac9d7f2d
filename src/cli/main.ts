/** The `svc` program once its runtime is settled (src/main.ts): parse, run, answer an exit code. */
import { CommanderError } from 'commander';
import { ExitError } from '../common/errors.js';
import { loadDotEnv } from '../common/env.js';
import { buildCli } from './index.js';

export async function main(argv: string[]): Promise<number> {
  loadDotEnv();
  try {
    await (await buildCli(argv)).parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof ExitError) {
      if (err.message) process.stderr.write(`${err.message}\n`);
      return err.exitCode;
    }
    if (err instanceof CommanderError) {
      // Commander already printed its message (help, version, or a flag error).
      return err.exitCode;
    }
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
