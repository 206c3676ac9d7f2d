/**
 * `svc serve --processes <n|auto>`: what the group's own process does (serve/process-group.ts
 * keeps the members). The argument rules and each member's command line are pure functions here,
 * tested on their own (serve-processes.test.ts).
 */
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';
import { InvalidArgumentError } from 'commander';
import { ExitError } from '../common/errors.js';

/** The hidden flag the group gives each member: listen with SO_REUSEPORT, stop when the group's process is gone. */
export const GROUP_MEMBER_FLAG = '--group-member';

/** `--processes`: a whole number of at least 1, or `auto` (the CPUs this process may use). */
export function processesArg(value: string): number {
  if (value === 'auto') return availableParallelism();
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 256)
    throw new InvalidArgumentError(`--processes must be a whole number from 1 to 256, or auto; got "${value}"`);
  return Number(value);
}

/** The flags the group reads; the rest pass to every member as typed. */
export interface GroupFlags {
  readonly processes: number;
  readonly port: number;
  readonly grpcPort?: number;
  readonly metrics?: boolean;
  readonly metricsPort?: number;
}

/** Why the group cannot run with these flags (exit 2), or undefined. */
export function groupRefusal(flags: GroupFlags): string | undefined {
  if (flags.metrics === true && flags.metricsPort === undefined)
    return (
      'svc serve: --processes with --metrics: each process counts on its own, so a scrape of the shared port ' +
      'would read one process at random; give --metrics-port <p> instead (process slot i serves /metrics on p + i)'
    );
  if (flags.metricsPort !== undefined && flags.metricsPort !== 0 && flags.metricsPort + flags.processes - 1 > 65535)
    return `svc serve: --metrics-port ${flags.metricsPort} + ${flags.processes - 1} is past port 65535`;
  return undefined;
}

/** Options the group sets per member (the value follows in the next argument, or after `=`). */
const PER_MEMBER = new Set(['--processes', '--port', '-p', '--grpc-port', '--metrics-port']);

/**
 * One member's arguments: the group's own, as typed (`serve` first), without the options it sets
 * per member; then the shared port, the gRPC door on slot 0 only (one listener; the other slots
 * do not open it), each slot's metrics port (p + slot), and the member flag.
 */
export function memberArgs(typed: readonly string[], slot: number, port: number, flags: GroupFlags): string[] {
  const out: string[] = [];
  for (let i = 0; i < typed.length; i++) {
    const arg = typed[i]!;
    const name = arg.startsWith('--') && arg.includes('=') ? arg.slice(0, arg.indexOf('=')) : arg;
    if (arg === '--') {
      out.push(...typed.slice(i));
      break;
    }
    if (/^-p\d+$/.test(arg)) continue; // -p9090
    if (PER_MEMBER.has(name)) {
      if (name === arg) i++; // its value is the next argument
      continue;
    }
    out.push(arg);
  }
  out.push('--port', String(port));
  if (flags.grpcPort !== undefined && slot === 0) out.push('--grpc-port', String(flags.grpcPort));
  if (flags.metricsPort !== undefined)
    out.push('--metrics-port', String(flags.metricsPort === 0 ? 0 : flags.metricsPort + slot));
  out.push(GROUP_MEMBER_FLAG);
  return out;
}

/**
 * The port the members share. Port 0 (any free port) is chosen here, once: each member asking the
 * kernel for its own would get a different one.
 */
export async function sharedPort(host: string, port: number): Promise<number> {
  if (port !== 0) return port;
  return new Promise<number>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err) =>
      reject(new ExitError(1, `svc serve: cannot find a free port on ${host}: ${err.message}`)),
    );
    probe.listen({ host, port: 0 }, () => {
      const address = probe.address();
      const found = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(found));
    });
  });
}
