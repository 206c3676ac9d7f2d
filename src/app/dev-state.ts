/**
 * The guard of `svc dev`: it deploys every save into the registry, so it runs only against a state
 * directory marked as a development one, by a `dev-state` file beside the databases.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isoNow } from '../common/clock.js';
import { SvcError } from '../common/errors.js';
import type { StatePaths } from '../common/paths.js';

/** The marker's file name in the state directory. */
export const DEV_STATE_MARKER = 'dev-state';

/**
 * How `svc dev` was let in: the directory was `marked` already; `marked-empty`, marked now because
 * it held no registry yet (a first run); `marked-init`, marked now by `--init`; `forced` by `--force`,
 * left unmarked.
 */
export type DevStateClaim = 'marked' | 'marked-empty' | 'marked-init' | 'forced';

/** The state directory holds a registry and no marker: it may be a real installation. */
export class NotDevStateError extends SvcError {
  constructor(readonly paths: StatePaths) {
    super(
      'SVC_ERR_FORBIDDEN',
      `the state directory ${paths.stateDir} is not marked as a development one (no ${join(paths.stateDir, DEV_STATE_MARKER)}) and already holds a registry; svc dev deploys every save into it`,
    );
    this.name = 'NotDevStateError';
  }
}

export interface DevStateOptions {
  /** Mark the directory (for good) even though it already holds a registry. */
  readonly init?: boolean;
  /** Run this once without a marker, and leave none. */
  readonly force?: boolean;
}

/**
 * Lets `svc dev` use the state directory, marking it when it is new or `init` is given.
 * @throws NotDevStateError for an unmarked directory that holds a registry, without `init` or `force`
 */
export function claimDevState(paths: StatePaths, opts: DevStateOptions): DevStateClaim {
  const marker = join(paths.stateDir, DEV_STATE_MARKER);
  if (existsSync(marker)) return 'marked';
  const empty = !existsSync(paths.registryDb);
  if (!empty && opts.init !== true) {
    if (opts.force === true) return 'forced';
    throw new NotDevStateError(paths);
  }
  mkdirSync(paths.stateDir, { recursive: true });
  writeFileSync(marker, `Marked as a development state directory by svc dev at ${isoNow()}: svc dev deploys every saved flow into it.\nDelete this file to make svc dev refuse this directory again.\n`);
  return empty ? 'marked-empty' : 'marked-init';
}
