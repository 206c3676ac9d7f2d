/** The one executor every door runs flows through, with its effects and the flow-state guard. */
import type { ExecutionObserver } from '../app/runtime/execution-observer.js';
import { Correlations } from '../app/runtime/correlation.js';
import { stateKeyFromEnv } from '../app/runtime/dedup-fingerprint.js';
import { FlowStateGuard } from '../app/runtime/dedup-guard.js';
import { Dedup } from '../app/runtime/dedup.js';
import { httpEgressEffect } from '../app/runtime/effects.js';
import { FlowExecutor } from '../app/runtime/flow-executor.js';
import { ExecutionLimiter, type EffectHandler, type RunDeps, type StepTimer } from '../engine/index.js';
import type { Closers } from './closers.js';
import type { ServeStores } from './stores.js';

export interface ServeExecutor {
  readonly executor: FlowExecutor;
  /** The correlations the reconcile timer times out. */
  readonly correlations: Correlations;
}

/**
 * Builds the executor with every effect it runs, `queue_publish` included (its handler from
 * serve/queues.ts queuePublishTarget, which reaches the queue workers once they are built).
 */
export function buildExecutor(
  stores: ServeStores,
  closers: Closers,
  queuePublish: EffectHandler,
  observer?: ExecutionObserver,
  stepTimer?: StepTimer,
): ServeExecutor {
  const { setting, flows, events } = stores;
  const egress = httpEgressEffect(setting);
  closers.add(() => egress.close());
  const engine: RunDeps = {
    effects: { http_egress: egress.handler, queue_publish: queuePublish },
    loadFlow: (tenant, name) => flows.latest(tenant, name),
    events,
    stepTimer,
  };
  // Flow state (docs/flow-state.md): dedup and correlation rows in the registry database.
  const stateKey = stateKeyFromEnv();
  const correlations = new Correlations(stores.flowState, { stateKey });
  // An in_flight claim outlives the longest possible run by a minute before another delivery may take it.
  const dedupLeaseMs = setting('flow_max_duration_secs') * 1000 + 60_000;
  const dedup = new Dedup(stores.flowState, {
    defaultWindowHours: setting('dedup_window_hours'),
    leaseMs: dedupLeaseMs,
    stateKey,
  });
  const executor = new FlowExecutor({
    guard: new FlowStateGuard(dedup, correlations),
    loadFlow: (tenant, name) => flows.latest(tenant, name),
    setting,
    limiter: new ExecutionLimiter(setting('max_concurrent_flow_executions')),
    events,
    traceEnabled: (tenant, flow) => stores.cache.traceEnabled(tenant, flow),
    maxDurationSecs: setting('flow_max_duration_secs'),
    engine,
    observer,
  });
  return { executor, correlations };
}
