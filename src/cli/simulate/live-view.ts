/** What `svc simulate` shows while it runs and at the end: a table redrawn every second on a terminal, one plain line a second otherwise, and the summary. */
import { formatStatuses, type LiveRow, type SimSummary, type StatsRow } from './stats.js';
import { formatTable } from '../table.js';

const LIVE_HEADERS = ['FLOW', 'REQ/S', 'REQUESTS', 'P50 MS', 'P95 MS', 'P99 MS', 'STATUSES'];

/** The terminal view: a table of every flow and the total, under a line with the time left. */
export function liveTable(rows: { flows: LiveRow[]; total: LiveRow }, elapsedSecs: number, leftSecs: number): string {
  const cells = (r: LiveRow) => [
    r.label,
    r.currentRps.toFixed(1),
    String(r.requests),
    ms(r.latency_ms.p50),
    ms(r.latency_ms.p95),
    ms(r.latency_ms.p99),
    formatStatuses(r.statuses),
  ];
  return [
    `svc simulate: ${elapsedSecs.toFixed(0)} s elapsed, ${leftSecs.toFixed(0)} s left`,
    formatTable(LIVE_HEADERS, [...rows.flows.map(cells), cells(rows.total)]),
  ].join('\n');
}

/** The plain view: the total in one line. */
export function liveLine(total: LiveRow, elapsedSecs: number, leftSecs: number): string {
  const l = total.latency_ms;
  return `${elapsedSecs.toFixed(0)}s ${leftSecs.toFixed(0)}s left  ${total.currentRps.toFixed(1)} req/s  ${total.requests} requests  p50 ${ms(l.p50)} ms  p95 ${ms(l.p95)} ms  p99 ${ms(l.p99)} ms  ${formatStatuses(total.statuses)}`;
}

const SUMMARY_HEADERS = ['FLOW', 'REQUESTS', 'RUN', 'ENQUEUE', 'REQ/S', 'P50 MS', 'P95 MS', 'P99 MS', 'STATUSES'];

/** The summary as text: one row per flow and the total. */
export function summaryText(s: SimSummary): string {
  const cells = (label: string, r: StatsRow) => [
    label,
    String(r.requests),
    String(r.run),
    String(r.enqueue),
    r.rps.toFixed(1),
    ms(r.latency_ms.p50),
    ms(r.latency_ms.p95),
    ms(r.latency_ms.p99),
    formatStatuses(r.statuses),
  ];
  const mode =
    s.rate === null
      ? `${s.connections} connections, closed loop`
      : `${s.connections} connections, open loop at ${s.rate} req/s`;
  return [
    `Summary: ${s.total.requests} requests in ${s.elapsed_secs} s to ${s.url} (${mode}; correlation ids ${s.run_id}-<n>; ended: ${s.stopped})`,
    formatTable(SUMMARY_HEADERS, [...s.flows.map((f) => cells(f.flow, f)), cells('total', s.total)]),
    ...s.withdrawn.map((w) => `withdrawn: ${w.flow} (its /${w.route} answered ${w.status}: ${w.reason})`),
  ].join('\n');
}

function ms(n: number): string {
  return n.toFixed(n >= 100 ? 0 : 2);
}
