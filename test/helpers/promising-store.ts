/**
 * A synchronous SQLite repository seen as the PostgreSQL stores are: every method answers with a
 * promise settled on a later turn, and a failure is a rejection rather than a throw. Code written
 * against a storage contract that forgets an `await` fails against it.
 */
export function promising<T extends object>(store: T): T {
  return new Proxy(store, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        new Promise((resolve) => setImmediate(resolve)).then(() => Reflect.apply(value, target, args) as unknown);
    },
  });
}
