/**
 * The guard of `svc dev`: it deploys every save into the registry, so it runs only against a store
 * marked as a development one: a state directory holding a `dev-state` file beside the databases,
 * or a PostgreSQL store holding a row of its `dev_state` table (store/pg/pg-dev-state.ts).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Awaitable } from '../../common/awaitable.js';
import { isoNow } from '../../common/clock.js';
import { SvcError } from '../../common/errors.js';
import type { StatePaths } from '../../common/paths.js';
import type { PgDevState } from '../../store/pg/pg-dev-state.js';

/** The marker's file name in the state directory. */
export const DEV_STATE_MARKER = 'dev-state';

/**
 * How `svc dev` was let in: the store was `marked` already; `marked-empty`, marked now because it
 * held no registry yet (a first run); `marked-init`, marked now by `--init`; `forced` by `--force`,
 * left unmarked.
 */
export type DevStateClaim = 'marked' | 'marked-empty' | 'marked-init' | 'forced';

/** Where the guard looks: the state directory's marker file, or the PostgreSQL store's marker row. */
export interface DevStateMarker {
  /** What is guarded, for messages. */
  readonly kind: 'state directory' | 'store';
  /** Its directory, or its URL without the password. */
  readonly where: string;
  /** The marker named for messages: `dev-state`, `a dev_state row`. */
  readonly marker: string;
  /** Where the marker would be, for the refusal: `/x/dev-state`, `row in its dev_state table`. */
  readonly markerPlace: string;
  isMarked(): Awaitable<boolean>;
  /** Holds no registry yet (a first run). */
  isEmpty(): Awaitable<boolean>;
  /** Writes the marker (saying it was made at `at`, ISO 8601), creating what holds it when needed. */
  mark(at: string): Awaitable<void>;
}

/** The store holds a registry and no marker: it may be a real installation. */
export class NotDevStateError extends SvcError {
  constructor(readonly marker: DevStateMarker) {
    super(
      'SVC_ERR_FORBIDDEN',
      `the ${marker.kind} ${marker.where} is not marked as a development one (no ${marker.markerPlace}) and already holds a registry; svc dev deploys every save into it`,
    );
    this.name = 'NotDevStateError';
  }
}

export interface DevStateOptions {
  /** Mark the store (for good) even though it already holds a registry. */
  readonly init?: boolean;
  /** Run this once without a marker, and leave none. */
  readonly force?: boolean;
}

/** The marker of a state directory: the `dev-state` file beside its databases. */
export function stateDirMarker(paths: StatePaths): DevStateMarker {
  const file = join(paths.stateDir, DEV_STATE_MARKER);
  return {
    kind: 'state directory',
    where: paths.stateDir,
    marker: DEV_STATE_MARKER,
    markerPlace: file,
    isMarked: () => existsSync(file),
    isEmpty: () => !existsSync(paths.registryDb),
    mark: (at) => {
      mkdirSync(paths.stateDir, { recursive: true });
      writeFileSync(
        file,
        `Marked as a development state directory by svc dev at ${at}: svc dev deploys every saved flow into it.\nDelete this file to make svc dev refuse this directory again.\n`,
      );
    },
  };
}

/** The marker of a PostgreSQL store (its URL without the password): a row of its `dev_state` table. */
export function pgStoreMarker(
  rows: Pick<PgDevState, 'isMarked' | 'isEmpty' | 'mark'>,
  redactedUrl: string,
): DevStateMarker {
  return {
    kind: 'store',
    where: redactedUrl,
    marker: 'a dev_state row',
    markerPlace: 'row in its dev_state table',
    isMarked: () => rows.isMarked(),
    isEmpty: () => rows.isEmpty(),
    mark: (at) => rows.mark(at),
  };
}

/**
 * Lets `svc dev` use the store, marking it when it is new or `init` is given.
 * @throws NotDevStateError for an unmarked store that holds a registry, without `init` or `force`
 */
export async function claimDevState(marker: DevStateMarker, opts: DevStateOptions): Promise<DevStateClaim> {
  if (await marker.isMarked()) return 'marked';
  const empty = await marker.isEmpty();
  if (!empty && opts.init !== true) {
    if (opts.force === true) return 'forced';
    throw new NotDevStateError(marker);
  }
  await marker.mark(isoNow());
  return empty ? 'marked-empty' : 'marked-init';
}
