/** `svc seed`: the demo set published, keys and UI users made, each flow run once (see app/use-cases/seed.ts). */
import { randomUUID } from 'node:crypto';
import { Command, Option } from 'commander';
import { readDemoFlows, seedDemo, type DemoRunner, type SeedResult } from '../app/use-cases/seed.js';
import { ExitError } from '../common/errors.js';
import { createLogger } from '../common/logger.js';
import { statePaths } from '../common/paths.js';
import { Closers } from '../serve/closers.js';
import { buildExecutor } from '../serve/executor.js';
import { openServeStores } from '../serve/stores.js';
import { buildQueues, queuePublishTarget } from '../serve/queues.js';
import { demoSet, DEMO_DIR_DEFAULT_TEXT } from './demo-set.js';
import { addStoreOptions, type StoreFlags } from './options.js';
import { registryLocation } from './stores.js';
import { out } from './table.js';

export function registerSeed(program: Command): void {
  const command = program
    .command('seed')
    .description(
      'a working demo in one command: register the demo tenants, deploy the demo flows at 1.0.0, make a demo API key per tenant and a UI user per role, and run each flow once, in the state directory of --db or the PostgreSQL store of --store',
    )
    .addOption(
      new Option('--demo-dir <dir>', 'the demo flows (*.flow.md, each with its <name>.sample.json)').default(
        undefined,
        DEMO_DIR_DEFAULT_TEXT,
      ),
    )
    .addOption(new Option('--no-run', 'do not run the flows after deploying them'))
    .action(seed);
  addStoreOptions(command);
}

interface SeedFlags extends StoreFlags {
  demoDir?: string;
  run: boolean;
}

async function seed(flags: SeedFlags): Promise<void> {
  const { dir, from } = demoSet(flags.demoDir);
  out(`reading the demo flows in ${dir} (${from})`);
  const flows = readDemoFlows(dir);
  const closers = new Closers();
  let result: SeedResult;
  try {
    // The same stores, executor and queues as `svc serve`, so each demo run is a real one.
    const paths = statePaths(flags.db);
    const stores = await openServeStores(
      paths,
      flags.store,
      createLogger({ LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' }),
      closers,
    );
    const publishTarget = queuePublishTarget();
    const run = buildExecutor(stores, closers, publishTarget.effect);
    await buildQueues(stores, run, publishTarget, createLogger({ LOG_LEVEL: 'warn' }), closers, {
      adoptOrphans: false,
    });
    // The demo is published through the stores; the executor and the queue workers read the
    // registry through the server's copy of it, which must hold the demo before the first run.
    let caughtUp: Promise<void> | undefined;
    const runner: DemoRunner = async (flow, input) => {
      await (caughtUp ??= Promise.resolve(stores.cache.refresh()));
      return run.executor.run(flow, input, { door: 'http', correlationId: randomUUID(), headers: {} });
    };
    result = await seedDemo(
      {
        tenants: stores.tenants,
        tenantAdmin: stores.tenantAdmin,
        keys: stores.keys,
        artifacts: stores.artifacts,
        users: stores.uiUsers,
        sessions: stores.uiSessions,
      },
      flows,
      { runner: flags.run ? runner : undefined },
      out,
    );
  } finally {
    const errors = await closers.runAll();
    if (errors.length > 0) process.stderr.write(`warning: ${errors.length} part(s) did not close cleanly\n`);
  }
  printNext(result, flags);
  if (result.failed.length > 0)
    throw new ExitError(1, `error: ${result.failed.length} demo flow(s) failed: ${result.failed.join(', ')}`);
}

function printNext(r: SeedResult, target: StoreFlags): void {
  const keys = Object.entries(r.secrets.keys);
  const users = Object.entries(r.secrets.users);
  if (keys.length > 0 || users.length > 0) {
    out('\nSecrets made by this run (shown once; only hashes are stored):');
    for (const [tenant, key] of keys) out(`  API key of ${tenant}: ${key}`);
    for (const [username, u] of users) out(`  UI user ${username} (${u.role}): password ${u.password}`);
  }
  // A store URL is shown without its password: the operator puts it back.
  const dbFlag = target.store === undefined ? ` --db ${target.db}` : ` --store '${registryLocation(target)}'`;
  const apiKeys = [...new Set(r.flows.map((f) => f.ir.tenant))]
    .map((t) => `--api-key ${t}=${r.secrets.keys[t] ?? '<your key>'}`)
    .join(' ');
  out(
    [
      '\nNext:',
      `  svc serve${dbFlag}`,
      `  svc simulate ${apiKeys}`,
      '  open http://127.0.0.1:9090/ui and log in as one of the demo-* users',
    ].join('\n'),
  );
}
