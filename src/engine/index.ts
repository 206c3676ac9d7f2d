/** The engine's public surface: run a compiled flow, and the helpers every door shares. */
export { runFlow, runFlowNow } from './run-flow.js';
export { buildHeaders, type RawHeaders } from './headers.js';
export { encodeOutput, type EncodedOutput } from './output.js';
export { ExecutionLimiter, BUSY_RETRY_AFTER_SECS } from './limiter.js';
export { prepareFlow, flowReadsHeaders, maskOf } from './prepare.js';
export { secretKeyOf } from './effects/secret-read.js';
export { envName } from './execution.js';
export { pointsOf, type ExecutionProbe, type FlowPoint, type ProbePoint } from './probe.js';
export type {
  EffectCall,
  EffectHandler,
  EffectResult,
  FlowContext,
  FlowResult,
  LoadedFlow,
  RunDeps,
  RunOptions,
  StepTimer,
} from './types.js';
// What the engine emits rows through, and a row as it is emitted (replay reads a candidate's rows).
export { NULL_EVENTS, type EventEmitter } from '../store/event-log/event-sink.js';
export type { LogEventInput } from '../store/event-log/event-log-row.js';
