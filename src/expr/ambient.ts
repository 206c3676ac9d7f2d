/**
 * What an expression reads from outside its context: the time (`now()`) and fresh ids (`uuid()`).
 * The service reads the wall clock and random UUIDs; `svc test` runs an example with the example's
 * fixed instant and numbered ids, so an answer that holds them can be expected exactly. Examples
 * run one at a time, so one process-wide source is enough, and the service's path pays one call.
 */
import { randomUUID } from 'node:crypto';

export interface Ambient {
  /** Milliseconds since the epoch. */
  nowMs(): number;
  uuid(): string;
}

const WALL: Ambient = Object.freeze({ nowMs: Date.now, uuid: () => randomUUID() });

let current: Ambient = WALL;

export function ambientNowMs(): number {
  return current.nowMs();
}

export function ambientUuid(): string {
  return current.uuid();
}

/**
 * Runs `fn` (and whatever it awaits) with `ambient` as the source, then restores the wall clock.
 * Not reentrant: the caller runs one such function at a time.
 */
export async function withAmbient<T>(ambient: Ambient, fn: () => Promise<T>): Promise<T> {
  const before = current;
  current = ambient;
  try {
    return await fn();
  } finally {
    current = before;
  }
}

/** Numbered UUIDs (version 4 layout), the same sequence for every example: 00000000-0000-4000-8000-000000000001, ... */
export function numberedUuids(): () => string {
  let n = 0;
  return () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}`;
}
