/** Hand-written IR builders for the engine's unit tests (not used at run time). */
import { IR_VERSION, type FlowIR, type StepIR } from '../../src/ir/types.js';
import type { LogEventInput } from '../../src/store/event-log/event-log.js';

export function step(name: string, fields: Partial<StepIR> = {}): StepIR {
  return { name, line: 1, effects: [], validate: [], responseHeaders: {}, setCtx: {}, ...fields };
}

export function flow(name: string, steps: StepIR[], fields: Partial<FlowIR> = {}): FlowIR {
  return {
    irVersion: IR_VERSION,
    flowdocVersion: '0.1',
    tenant: 'acme',
    flow: name,
    effects: [],
    queue: { maxAttempts: 3, initialDelayMs: 1000, backoffFactor: 2, maxDelayMs: 60000 },
    config: [],
    logLevel: 'full',
    logExtraMaskFields: [],
    responseHeaders: [],
    steps,
    ...fields,
  };
}

/** An event sink that keeps what it is given. */
export function memoryEvents(): { emit(e: LogEventInput): void; events: LogEventInput[] } {
  const events: LogEventInput[] = [];
  return { events, emit: (e) => void events.push(e) };
}
