/** A value a storage contract returns: at once from the embedded SQLite store, as a promise from PostgreSQL. */
export type Awaitable<T> = T | Promise<T>;
