/** The operational log (stderr, pino). Filter from RUST_LOG (the spec's name) or LOG_LEVEL, default info. */
import pino, { type Logger } from 'pino';

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']);

/** Reads a RUST_LOG-style filter (`info`, `warn`, `svc=debug,info`) down to one pino level. */
export function levelFromFilter(filter: string | undefined): string {
  if (!filter) return 'info';
  let level = 'info';
  for (const part of filter.split(',')) {
    const candidate = (part.includes('=') ? part.slice(part.indexOf('=') + 1) : part).trim().toLowerCase();
    const mapped = candidate === 'warning' ? 'warn' : candidate === 'off' ? 'silent' : candidate;
    if (LEVELS.has(mapped)) level = mapped;
  }
  return level;
}

export type { Logger };

export function createLogger(env: NodeJS.ProcessEnv = process.env): Logger {
  const level = levelFromFilter(env.RUST_LOG ?? env.LOG_LEVEL);
  return pino(
    { level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination({ fd: 2, sync: false }),
  );
}
