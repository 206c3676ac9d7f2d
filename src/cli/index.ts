/** The command table: one line per command group, each group in its own file. */
import { Command } from 'commander';
import { registerFlowCommands } from './flow-commands.js';
import { registerProto } from './proto.js';
import { registerAudit } from './audit.js';
import { registerConfigCheck, registryConfigSource } from './config-check.js';
import { registerKeys } from './keys.js';
import { registerDlq } from './dlq.js';
import { registerState } from './state.js';
import { registerStorage } from './storage.js';
import { registerServe } from './serve.js';
import { registerTenant } from './tenant.js';
import { registerTrace } from './trace.js';
import { registerUi } from './ui.js';
import { registerCert } from './cert.js';
import { registerSeed } from './seed.js';
import { registerSimulate } from './simulate.js';
import { registerFlows } from './flows.js';
import { registerLogs } from './logs.js';
import { registerDev } from './dev.js';

export function buildCli(): Command {
  const program = new Command('svc')
    .description('Flow execution service: publish Markdown flows and run them over HTTP, queues, cron, gRPC and SOAP')
    .showHelpAfterError()
    .exitOverride();
  registerServe(program);
  registerFlowCommands(program);
  registerDev(program);
  registerFlows(program);
  registerLogs(program);
  registerProto(program);
  registerTenant(program);
  registerKeys(program);
  registerAudit(program);
  registerDlq(program);
  registerState(program);
  registerStorage(program);
  registerTrace(program);
  registerUi(program);
  registerCert(program);
  registerSeed(program);
  registerSimulate(program);
  registerConfigCheck(program, registryConfigSource);
  return program;
}
