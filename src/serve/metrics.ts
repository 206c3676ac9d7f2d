/**
 * The service's Prometheus metrics (`svc serve --metrics`): one registry, prefix `svc_`, base units
 * (seconds, bytes), `_total` counters. Label values are bounded: route templates, statuses, doors,
 * outcomes, and tenant and flow names only where they come from what is deployed (never a
 * correlation id, a key or a path). The request path's families are plain-number tallies
 * (metric-tally.ts: no label hashing per request) found through one map lookup; everything that
 * costs (queue depth, certificate dates, writer queues) is read at scrape time. Only this module
 * (and metric-tally.ts, for a type) imports prom-client.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { TallyFamily, type TallySeries } from './metric-tally.js';
import type { ExecutionObserver, ExecutionOutcome } from '../app/runtime/execution-observer.js';
import type { QueueFigures } from '../app/use-cases/dlq.js';
import type { RunMeta } from '../app/runtime/run-meta.js';
import type { HttpObserver, MetricsExposition } from '../doors/http/observer.js';

export const METRICS_PREFIX = 'svc_';

/** Request and execution durations: half a millisecond to a minute. Seconds. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Writer batches: a tenth of a millisecond to five seconds. Seconds. */
const BATCH_BUCKETS = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5];

/** What is read at scrape time. Each may throw: the scrape then answers without that family's values. */
export interface ScrapeSources {
  /** Every queue on disk with its counters (app/use-cases/dlq.ts `queueFigures`). */
  queues(): Promise<QueueFigures[]>;
  /** Queue workers this process runs. */
  workersRunning(): number;
  /** Queues waiting for a worker's slot with something to deliver, and for how long (milliseconds). */
  queuesWaiting(): { tenant: string; flow: string; waitedMs: number }[];
  /** Event-log rows waiting to be written, and lost since start. */
  eventLog(): { queuedRows: number; droppedRows: number };
  /** Audit entries waiting to be committed. */
  auditQueued(): number;
  /** Certificates in the registry: tenant, name and the end of validity (epoch milliseconds). */
  certificates(): Promise<{ tenant: string; name: string; validToMs: number }[]>;
}

export interface ServiceMetrics extends MetricsExposition {
  /** Gives the scrape-time families their sources (the queues exist only after the executor); before it they have no values. */
  attach(sources: ScrapeSources): void;
  readonly executions: ExecutionObserver;
  readonly http: HttpObserver;
  /** A gate refusal, by its status. */
  refused(status: number): void;
  /** Hooks for the writers' batch latency (event log rows, audit entries). */
  eventBatchWritten(rows: number, seconds: number): void;
  auditBatchWritten(entries: number, seconds: number): void;
}

const NO_SOURCES: ScrapeSources = {
  queues: async () => [],
  workersRunning: () => 0,
  queuesWaiting: () => [],
  eventLog: () => ({ queuedRows: 0, droppedRows: 0 }),
  auditQueued: () => 0,
  certificates: async () => [],
};

export function createServiceMetrics(onScrapeError: (family: string, err: unknown) => void): ServiceMetrics {
  let sources = NO_SOURCES;
  /** The queues' figures, read once per scrape for the three queue families. */
  let queuesThisScrape: Promise<QueueFigures[]> | undefined;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: METRICS_PREFIX });
  const name = (n: string): string => `${METRICS_PREFIX}${n}`;

  const tally = (metric: string, help: string, buckets: readonly number[] = []): TallyFamily => {
    const family = new TallyFamily(name(metric), help, buckets);
    family.register(registry);
    return family;
  };
  const httpRequests = tally('http_requests_total', 'HTTP requests answered, by route template and status');
  const httpDuration = tally(
    'http_request_duration_seconds',
    "Time from a request's arrival to its answer, by route template",
    DURATION_BUCKETS,
  );
  const executions = tally('flow_executions_total', 'Flow executions, by tenant, flow, door and outcome');
  const executionDuration = tally(
    'flow_execution_duration_seconds',
    'Flow execution time, by tenant, flow and door',
    DURATION_BUCKETS,
  );
  const queueProcessed = tally(
    'queue_messages_processed_total',
    'Queue deliveries finished (succeeded, fault handled or filtered), by tenant and flow',
  );
  const queueFailed = tally(
    'queue_messages_failed_total',
    'Queue delivery attempts that failed (each retry counts), by tenant and flow',
  );
  const refusals = new Counter({
    name: name('gate_refusals_total'),
    help: 'Requests the gate refused, by status',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const eventBatch = new Histogram({
    name: name('event_log_batch_duration_seconds'),
    help: 'Time to write one batch of event-log rows',
    buckets: BATCH_BUCKETS,
    registers: [registry],
  });
  const auditBatch = new Histogram({
    name: name('audit_batch_duration_seconds'),
    help: 'Time to commit one batch of audit entries',
    buckets: BATCH_BUCKETS,
    registers: [registry],
  });

  const queueGauge = (metric: string, help: string, pick: (q: QueueFigures) => number): Gauge<'tenant' | 'flow'> =>
    new Gauge({
      name: name(metric),
      help,
      labelNames: ['tenant', 'flow'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const q of await scraped('queues', () => (queuesThisScrape ??= sources.queues()), []))
          this.set({ tenant: q.tenant, flow: q.flow }, pick(q));
      },
    });

  /** Runs one scrape-time read; a failure is reported and that family is left without values. */
  async function scraped<T>(family: string, read: () => T | Promise<T>, fallback: T): Promise<T> {
    try {
      return await read();
    } catch (err) {
      onScrapeError(family, err);
      return fallback;
    }
  }

  queueGauge(
    'queue_messages_pending',
    'Messages waiting for their first delivery, by tenant and flow',
    (q) => q.pending,
  );
  queueGauge('queue_retries_scheduled', 'Messages waiting for a retry, by tenant and flow', (q) => q.retriesScheduled);
  queueGauge(
    'queue_dead_letters',
    'Dead letters not yet replayed or discarded, by tenant and flow',
    (q) => q.deadLettersPending,
  );
  new Gauge({
    name: name('queue_workers_running'),
    help: 'Queue workers this process runs',
    registers: [registry],
    async collect() {
      this.set(await scraped('queue workers', () => sources.workersRunning(), 0));
    },
  });
  new Gauge({
    name: name('queue_waiting_for_worker_seconds'),
    help: 'How long each queue with messages has waited for a worker slot (max_queue_workers), by tenant and flow; absent when served',
    labelNames: ['tenant', 'flow'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const q of await scraped('queue workers', () => sources.queuesWaiting(), []))
        this.set({ tenant: q.tenant, flow: q.flow }, q.waitedMs / 1000);
    },
  });
  new Gauge({
    name: name('queues_waiting_for_worker'),
    help: 'Queues with messages waiting for a worker slot (max_queue_workers)',
    registers: [registry],
    async collect() {
      this.set((await scraped('queue workers', () => sources.queuesWaiting(), [])).length);
    },
  });
  new Gauge({
    name: name('event_log_queued_rows'),
    help: 'Event-log rows emitted and not yet written',
    registers: [registry],
    async collect() {
      this.set((await scraped('event log', () => sources.eventLog(), { queuedRows: 0, droppedRows: 0 })).queuedRows);
    },
  });
  // A counter read from the writer's own tally at scrape time (it only grows): increased by the difference.
  let droppedSeen = 0;
  new Counter({
    name: name('event_log_dropped_rows_total'),
    help: 'Event-log rows lost since start (their batch could not be written)',
    registers: [registry],
    async collect() {
      const now = (await scraped('event log', () => sources.eventLog(), { queuedRows: 0, droppedRows: droppedSeen }))
        .droppedRows;
      if (now > droppedSeen) this.inc(now - droppedSeen);
      droppedSeen = Math.max(droppedSeen, now);
    },
  });
  new Gauge({
    name: name('audit_queued_entries'),
    help: 'Audit entries appended and not yet committed',
    registers: [registry],
    async collect() {
      this.set(await scraped('audit', () => sources.auditQueued(), 0));
    },
  });
  new Gauge({
    name: name('certificate_expiration_timestamp_seconds'),
    help: 'End of validity of each certificate in the registry, by tenant and name (Unix seconds)',
    labelNames: ['tenant', 'name'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const c of await scraped('certificates', () => sources.certificates(), []))
        this.set({ tenant: c.tenant, name: c.name }, Math.floor(c.validToMs / 1000));
    },
  });

  return {
    attach: (s) => {
      sources = s;
    },
    executions: executionObserver(executions, executionDuration, queueProcessed, queueFailed),
    http: httpObserver(httpRequests, httpDuration),
    refused: (status) => refusals.inc({ status: String(status) }),
    eventBatchWritten: (_rows, seconds) => eventBatch.observe(seconds),
    auditBatchWritten: (_entries, seconds) => auditBatch.observe(seconds),
    render: async () => {
      queuesThisScrape = undefined;
      try {
        return { contentType: registry.contentType, body: await registry.metrics() };
      } finally {
        queuesThisScrape = undefined;
      }
    },
  };
}

/**
 * The tallies of one kind of execution, found once. A request pays two Map lookups on strings it
 * already holds (their hashes are cached in the strings: no key is built per request) and the
 * increments (measured: 0.26-0.39 us per call with a built key).
 */
function executionObserver(
  executions: TallyFamily,
  duration: TallyFamily,
  processed: TallyFamily,
  failed: TallyFamily,
): ExecutionObserver {
  interface Found {
    count: TallySeries;
    time: TallySeries;
    queue: TallySeries | undefined;
  }
  // tenant -> flow -> door -> outcome: every key a string the caller already holds.
  const byTenant = new Map<string, Map<string, Map<string, Map<string, Found>>>>();
  const make = (tenant: string, flow: string, door: RunMeta['door'], outcome: ExecutionOutcome): Found => {
    const tf = `${tenant}\u0000${flow}`;
    const queue =
      door !== 'queue'
        ? undefined
        : outcome === 'failed'
          ? failed.series(tf, { tenant, flow })
          : processed.series(tf, { tenant, flow });
    return {
      count: executions.series(`${tf}\u0000${door}\u0000${outcome}`, { tenant, flow, door, outcome }),
      time: duration.series(`${tf}\u0000${door}`, { tenant, flow, door }),
      queue,
    };
  };
  return {
    executed(tenant: string, flow: string, door: RunMeta['door'], outcome: ExecutionOutcome, seconds: number): void {
      let byFlow = byTenant.get(tenant);
      if (byFlow === undefined) byTenant.set(tenant, (byFlow = new Map()));
      let byDoor = byFlow.get(flow);
      if (byDoor === undefined) byFlow.set(flow, (byDoor = new Map()));
      let byOutcome = byDoor.get(door);
      if (byOutcome === undefined) byDoor.set(door, (byOutcome = new Map()));
      let c = byOutcome.get(outcome);
      if (c === undefined) byOutcome.set(outcome, (c = make(tenant, flow, door, outcome)));
      c.count.inc();
      c.time.observe(seconds);
      c.queue?.inc();
    },
  };
}

/** The tallies of one route and status, found by the route template (a constant string) and the status number. */
function httpObserver(requests: TallyFamily, duration: TallyFamily): HttpObserver {
  const byRoute = new Map<string, Map<number, { count: TallySeries; time: TallySeries }>>();
  return {
    answered(route: string, status: number, seconds: number): void {
      let byStatus = byRoute.get(route);
      if (byStatus === undefined) byRoute.set(route, (byStatus = new Map()));
      let c = byStatus.get(status);
      if (c === undefined)
        byStatus.set(
          status,
          (c = {
            count: requests.series(`${route} ${status}`, { route, status: String(status) }),
            time: duration.series(route, { route }),
          }),
        );
      c.count.inc();
      c.time.observe(seconds);
    },
  };
}
