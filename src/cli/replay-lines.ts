/** How a replay's verdicts are printed, by `svc replay` and `svc deploy --replay-since`: paths and reasons, never a value. */
import type { ReplayResult } from '../app/testing/replay.js';
import type { ReplayCounts } from '../app/use-cases/replay.js';

/** `N deliveries: a same, b differ, c not replayable`. */
export function countsLine(c: ReplayCounts): string {
  return `${c.deliveries} deliveries: ${c.same} same, ${c.differs} differ, ${c.not_replayable} not replayable`;
}

/** `<correlation id>  same | differs: <paths> | not replayable: <why>`. */
export function verdictLine(r: ReplayResult): string {
  const v = r.verdict;
  if (v.kind === 'same') return `${r.correlationId}  same`;
  if (v.kind === 'differs') return `${r.correlationId}  differs: ${v.paths.join(', ')}`;
  return `${r.correlationId}  not replayable: ${v.why}`;
}
