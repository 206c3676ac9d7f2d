/**
 * `svc replay` (issue 38, first part): the traced deliveries of a flow replayed against a
 * candidate file (compiled, not deployed), each call out answered from its recording, nothing
 * written and nothing sent. Prints a verdict per delivery and the differing paths, never a value;
 * exit 0 when every replayable delivery is the same, 1 otherwise.
 */
import { Command, Option } from 'commander';
import { compileForPublication } from '../app/use-cases/publish.js';
import { countVerdicts, replayRecorded } from '../app/use-cases/replay.js';
import { parseSince } from '../app/use-cases/event-search.js';
import { ExitError, SvcError } from '../common/errors.js';
import { FlowPublicationError, formatDiagnostic } from '../flow/diagnostics.js';
import { EXAMPLE_DOORS } from '../serve/example-doors.js';
import { openScratchFlowState } from '../storage/index.js';
import { addStoreOptions, nameArg, type StoreFlags, tenantOption } from './options.js';
import { withStore } from './stores.js';
import { out } from './table.js';
import { countsLine, verdictLine } from './replay-lines.js';
import { candidateFlow } from '../app/testing/candidate.js';

export function registerReplay(program: Command): void {
  const command = program
    .command('replay')
    .description(
      "replay traced deliveries of a flow against a candidate .flow.md (compiled, not deployed): every call out answered from the delivery's recording, the clock at its time, nothing written or sent; prints same, differs (with the paths) or not replayable (and why) per delivery, never a payload value. Exit 0 when every replayable delivery is the same, 1 otherwise",
    )
    .addOption(tenantOption('tenant id', { required: true }))
    .addOption(
      new Option('--flow <name>', 'the flow whose deliveries are replayed')
        .makeOptionMandatory()
        .argParser(nameArg('flow')),
    )
    .addOption(new Option('--candidate <file>', 'the .flow.md to replay them against').makeOptionMandatory())
    .addOption(new Option('--since <when>', 'deliveries since: a duration (1h, 7d) or a UTC day or instant'))
    .addOption(new Option('--correlation-id <id>', 'one delivery'))
    .addOption(new Option('--last <n>', 'the last N deliveries found').argParser((v) => positive(v)))
    .addOption(
      new Option(
        '--ignore <path...>',
        'paths whose differences do not count (body.id, headers.x-request-id): volatile values',
      ),
    )
    .addOption(
      new Option(
        '--ignore-volatile',
        'also leave out the paths the candidate declares in replay_volatile (ids, times)',
      ),
    )
    .addOption(new Option('--libs <dir>', 'directory of *.lib.md step libraries for the candidate'))
    .addOption(new Option('--json', 'one JSON object per delivery, then the counts'))
    .action(replay);
  addStoreOptions(command);
}

function positive(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new ExitError(1, `error: --last must be a whole number of deliveries, got ${v}`);
  return n;
}

export interface ReplayCommandOptions extends StoreFlags {
  tenant: string;
  flow: string;
  candidate: string;
  since?: string;
  correlationId?: string;
  last?: number;
  ignore?: string[];
  ignoreVolatile?: boolean;
  libs?: string;
  json?: boolean;
}

export async function replay(opts: ReplayCommandOptions): Promise<void> {
  let since: string | undefined;
  try {
    since = opts.since === undefined ? undefined : parseSince(opts.since);
  } catch (err) {
    if (err instanceof SvcError) throw new ExitError(1, `error: ${err.message}`);
    throw err;
  }
  let compiled;
  try {
    compiled = compileForPublication({ path: opts.candidate, libs: opts.libs });
  } catch (err) {
    if (err instanceof FlowPublicationError) throw new ExitError(2, err.diagnostics.map(formatDiagnostic).join('\n'));
    if (err instanceof SvcError) throw new ExitError(1, `error: ${err.message}`);
    throw err;
  }
  if (compiled.ir.tenant !== opts.tenant || compiled.ir.flow !== opts.flow)
    throw new ExitError(
      1,
      `error: ${opts.candidate} is flow ${compiled.ir.tenant}/${compiled.ir.flow}, not ${opts.tenant}/${opts.flow}`,
    );
  const candidate = candidateFlow(compiled.ir, compiled.hash);
  const results = await withStore(
    opts,
    (s) =>
      replayRecorded(
        { log: s.eventLog, artifacts: s.artifacts },
        { tenant: opts.tenant, flow: opts.flow, since, correlationId: opts.correlationId, last: opts.last },
        candidate,
        {
          flows: new Map([[`${opts.tenant}/${opts.flow}`, candidate]]),
          doors: EXAMPLE_DOORS,
          flowState: openScratchFlowState,
        },
        { ignore: opts.ignore, ignoreVolatile: opts.ignoreVolatile },
      ),
    { readOnly: true },
  );
  // Verdicts and paths only: the recorded and candidate values are the support role's (the UI page).
  for (const r of results)
    out(opts.json ? JSON.stringify({ correlation_id: r.correlationId, ...r.verdict }) : verdictLine(r));
  const counts = countVerdicts(results);
  out(opts.json ? JSON.stringify(counts) : countsLine(counts));
  // Nothing compared (no delivery found, or none replayable) vouches for nothing: a gate must not pass on it.
  if (counts.same + counts.differs === 0)
    throw new ExitError(1, 'error: no delivery could be compared; nothing vouches for the candidate');
  if (counts.differs > 0) throw new ExitError(1, '');
}
