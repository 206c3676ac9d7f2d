#!/usr/bin/env node
/** The `svc` binary: the only place that calls process.exit. */
import { CommanderError } from 'commander';
import { ExitError } from './common/errors.js';
import { loadDotEnv } from './common/env.js';
import { buildCli } from './cli/index.js';
import { runtimeRefusal } from './common/runtime.js';

async function main(argv: string[]): Promise<number> {
  const refusal = runtimeRefusal(process.version, process.execPath);
  if (refusal !== undefined) {
    process.stderr.write(`${refusal}\n`);
    return 2;
  }
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

const code = await main(process.argv);
process.exitCode = code;
