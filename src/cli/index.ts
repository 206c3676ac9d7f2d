/** The command table: one line per command group, each group in its own file. */
import { Command } from 'commander';
import { registerDlq } from './dlq.js';
import { registerServe } from './serve.js';

export function buildCli(): Command {
  const program = new Command('svc')
    .description('Flow execution service: publish Markdown flows and run them over HTTP, queues, cron, gRPC and SOAP')
    .showHelpAfterError()
    .exitOverride();
  registerServe(program);
  registerDlq(program);
  return program;
}
