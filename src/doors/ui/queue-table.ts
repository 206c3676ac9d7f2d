/** The queues' counters and pending retries, shown on the Overview and Queues pages. */
import type { QueueFigures } from '../../app/use-cases/dlq.js';
import { html, type Html } from './html.js';
import { flowLink } from './links.js';
import { table, type Header } from './layout.js';

const QUEUE_HEADERS: readonly Header[] = [
  'Queue',
  'Backlog',
  'Retries scheduled',
  {
    label: 'Processed',
    title:
      'Messages whose delivery finished: the flow completed (or its fault handler did), or a condition filtered the message; each counts once, however many attempts failed before. Not those waiting for a retry, nor dead letters (their own column). On the state directory since compaction last emptied the queue; on PostgreSQL since its first message.',
  },
  'Dead letters',
  'Worker',
];
const RETRY_HEADERS = ['Queue', 'Message id', 'Attempts', 'Due (UTC)'];
/** Retries listed at most; the counters above say how many there are. */
const RETRIES_SHOWN = 200;

/** Who runs the queue, or how long it has waited for a slot of the server's pool of workers. */
function workerText(q: QueueFigures): string {
  if (q.worker !== undefined) return q.worker;
  if (q.waitingMs !== undefined) return `waiting for a worker slot, ${(q.waitingMs / 1000).toFixed(1)} s`;
  return 'none';
}

/** The worker, flagged when retries are overdue with nobody to run them (the use case decides: overdueRetries). */
function workerCell(q: QueueFigures): Html {
  const o = q.overdue;
  if (o === undefined) return html`${workerText(q)}`;
  return html`${workerText(q)}
    <span class="badge bad"
      >overdue retries, no worker: ${o.count}, oldest due ${new Date(o.oldestDueMs).toISOString()}</span
    >`;
}

export function queueTable(queues: readonly QueueFigures[]): Html {
  const rows = queues.map(
    (q) =>
      html`<tr>
        <td>${flowLink(q.tenant, q.flow)}</td>
        <td class="num">${q.pending}</td>
        <td class="num">${q.retriesScheduled}</td>
        <td class="num">${q.processed}</td>
        <td class="num">${q.deadLettersPending}</td>
        <td>${workerCell(q)}</td>
      </tr>`,
  );
  const retries = queues.flatMap((q) =>
    q.retries.map(
      (r) =>
        html`<tr>
          <td>${q.tenant}/${q.flow}</td>
          <td class="num">${r.id}</td>
          <td class="num">${r.attempts}</td>
          <td>${new Date(r.dueMs).toISOString()}</td>
        </tr>`,
    ),
  );
  const pending =
    retries.length === 0
      ? ''
      : html`<h2>Pending retries</h2>
          ${table(RETRY_HEADERS, retries.slice(0, RETRIES_SHOWN), '')}`;
  return html`${table(QUEUE_HEADERS, rows, 'No queues yet.')}${pending}`;
}
