/** Flag helpers shared by every command group. */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { ExitError } from '../common/errors.js';
import { describeNameProblem } from '../common/names.js';
import { defaultDbPath } from '../common/paths.js';
import { parseStoreUrl } from '../store/pg/store-url.js';

/** `--db <path>`: the registry database; its directory is the state directory. */
export function dbOption(): Option {
  return new Option('--db <path>', 'registry database; its directory holds every other state file').default(
    defaultDbPath(),
    '~/.svc/registry.db',
  );
}

/**
 * `--store <url>` (or SVC_STORE_URL): the shared PostgreSQL store of a cluster. With it, the
 * service's state is in that database, not in the state directory of `--db`.
 */
export function storeOption(): Option {
  return new Option(
    '--store <url>',
    'keep all state in this PostgreSQL database (postgres://user@host:port/db, optional ?schema=name) instead of the state directory',
  ).env('SVC_STORE_URL');
}

/** The state flags of a command: the SQLite state directory of `--db`, or the PostgreSQL store of `--store`. */
export interface StoreFlags {
  /** The registry database; its directory is the state directory. Unused when `store` is set. */
  readonly db: string;
  /** A PostgreSQL store URL (`--store` or SVC_STORE_URL): when set, every state the command reads or writes is there. */
  readonly store?: string;
}

/**
 * Adds `--db` and `--store` to a command. Both given is a usage error (exit 2): `--db` counts only
 * when typed, since it always has a default; `--store` counts from the flag or SVC_STORE_URL. A
 * `--store` that is not a store URL is refused before the command runs (exit 1, like a bad flag),
 * its password never echoed.
 */
export function addStoreOptions(cmd: Command, db: Option = dbOption()): Command {
  return cmd
    .addOption(db)
    .addOption(storeOption())
    .hook('preAction', (_parent, action) => {
      const store = givenStore(action);
      if (store === undefined) return;
      if (action.getOptionValueSource('db') === 'cli') {
        throw new ExitError(
          2,
          `error: --db and ${storeName(action)} name two different stores; give one of them (--db for the state directory, --store for PostgreSQL)`,
        );
      }
      try {
        parseStoreUrl(store);
      } catch (err) {
        throw new ExitError(1, `error: ${storeName(action)}: ${(err as Error).message}`);
      }
    });
}

/**
 * Adds `--db` and a `--store` that is refused (exit 2, naming `why`): the command works on the
 * SQLite state directory only. SVC_STORE_URL set in the environment is refused too, rather than
 * silently working on another store than the one the operator's other commands use.
 */
export function addSqliteOnlyOptions(cmd: Command, why: string, db: Option = dbOption()): Command {
  return cmd
    .addOption(db)
    .addOption(new Option('--store <url>', `not taken: ${why}`).env('SVC_STORE_URL'))
    .hook('preAction', (_parent, action) => {
      if (givenStore(action) === undefined) return;
      const unset =
        action.getOptionValueSource('store') === 'env'
          ? '; unset SVC_STORE_URL to work on the state directory of --db'
          : '';
      throw new ExitError(2, `error: svc ${commandPath(action)} does not take ${storeName(action)}: ${why}${unset}`);
    });
}

/** The store URL given, if any (an empty SVC_STORE_URL counts as unset). */
function givenStore(cmd: Command): string | undefined {
  const store = cmd.opts<{ store?: string }>().store;
  if (store === undefined || store === '') {
    cmd.setOptionValue('store', undefined);
    return undefined;
  }
  return store;
}

function storeName(cmd: Command): string {
  return cmd.getOptionValueSource('store') === 'env' ? '--store (from SVC_STORE_URL)' : '--store';
}

function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent != null; c = c.parent) names.unshift(c.name());
  return names.join(' ');
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
    if (!/^\d+$/.test(value) || Number(value) < min)
      throw new InvalidArgumentError(`${what} must be a whole number of at least ${min}, got "${value}"`);
    return Number(value);
  };
}

/** `--tenant <t>`: a tenant id, refused when it breaks the name rule; mandatory with `required`. */
export function tenantOption(description: string, opts: { required?: boolean } = {}): Option {
  const option = new Option('--tenant <t>', description).argParser(nameArg('tenant'));
  return opts.required === true ? option.makeOptionMandatory() : option;
}
