/**
 * Watches one folder (not its subfolders) with node:fs `watch` and reports each file of interest
 * once its writes have settled. The folder is watched, not the files: an editor that saves by
 * writing a temporary file and renaming it over the old one replaces the file's inode, which a
 * watch on the file itself would lose; the folder sees the new name arrive.
 */
import { watch, type FSWatcher } from 'node:fs';

export interface FolderWatchOptions {
  readonly dir: string;
  /** Only names ending so are reported (`.flow.md`); hidden names (`.#x.flow.md`, editor locks) never are. */
  readonly suffix: string;
  /**
   * Quiet time after a file's last event before it is reported, in ms: one save is several events
   * (truncate, write, rename, chmod). @default 150
   */
  readonly debounceMs?: number;
  /** A file settled: written, renamed into place, or removed (the callee looks which). */
  readonly onChange: (name: string) => void;
  /** The platform gave an event without a name: every file may have changed. */
  readonly onUnknown: () => void;
  /** The watch broke (e.g. the folder was removed); nothing more will be reported. */
  readonly onError: (err: Error) => void;
}

export class FolderWatcher {
  readonly #opts: FolderWatchOptions;
  readonly #watcher: FSWatcher;
  /** One pending timer per name: bounded by the folder's own files. */
  readonly #pending = new Map<string, NodeJS.Timeout>();

  constructor(opts: FolderWatchOptions) {
    this.#opts = opts;
    this.#watcher = watch(opts.dir, { persistent: true }, (_event, name) =>
      this.#saw(name === null ? undefined : String(name)),
    );
    this.#watcher.on('error', (err) => {
      this.close();
      opts.onError(err);
    });
  }

  #saw(name: string | undefined): void {
    const key = name ?? '';
    if (name !== undefined && (!name.endsWith(this.#opts.suffix) || name.startsWith('.'))) return;
    clearTimeout(this.#pending.get(key));
    this.#pending.set(
      key,
      setTimeout(() => {
        this.#pending.delete(key);
        if (name === undefined) this.#opts.onUnknown();
        else this.#opts.onChange(name);
      }, this.#opts.debounceMs ?? 150),
    );
  }

  close(): void {
    for (const t of this.#pending.values()) clearTimeout(t);
    this.#pending.clear();
    this.#watcher.close();
  }
}
