/**
 * The contract between whatever emits log events (the engine, the executor, the doors) and the
 * event log that stores them, with its null object. It imports types only, so the engine can
 * depend on it without loading the log writer or the SQLite binding.
 */
import type { LogEventInput } from './event-log-row.js';

/** Anything that accepts log events (the engine and the doors depend only on this). */
export interface EventEmitter {
  emit(event: LogEventInput): void;
}

/** An emitter that drops everything (tests, tools without a state directory). */
export const NULL_EVENTS: EventEmitter = Object.freeze({ emit: () => undefined });
