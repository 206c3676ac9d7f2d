/** Flag helpers shared by every command group. */
import { InvalidArgumentError, Option } from 'commander';
import { describeNameProblem } from '../common/names.js';
import { defaultDbPath } from '../common/paths.js';

/** `--db <path>`: the registry database; its directory is the state directory. */
export function dbOption(): Option {
  return new Option('--db <path>', 'registry database; its directory holds every other state file').default(defaultDbPath(), '~/.svc/registry.db');
}

/**
 * `--store <url>` (or SVC_STORE_URL): the shared PostgreSQL store of a cluster. With it, the
 * service's state is in that database, not in the state directory of `--db`.
 */
export function storeOption(): Option {
  return new Option('--store <url>', 'keep all state in this PostgreSQL database (postgres://user@host:port/db, optional ?schema=name) instead of the state directory').env('SVC_STORE_URL');
}

/** Parser for a flag naming a tenant or flow: refuses anything that breaks the name rule. */
export function nameArg(what: string): (value: string) => string {
  return (value: string) => {
    const problem = describeNameProblem(what, value);
    if (problem !== undefined) throw new InvalidArgumentError(problem);
    return value;
  };
}

/** Parser for a whole number flag. */
export function intArg(what: string, min = 0): (value: string) => number {
  return (value: string) => {
    if (!/^\d+$/.test(value) || Number(value) < min) throw new InvalidArgumentError(`${what} must be a whole number of at least ${min}, got "${value}"`);
    return Number(value);
  };
}
