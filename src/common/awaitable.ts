/**
 * A value given at once or later: a storage contract's answer (at once from the embedded SQLite
 * store, as a promise from PostgreSQL), or a flow's result (at once when no step had to wait).
 */
export type Awaitable<T> = T | Promise<T>;
