/**
 * undici, imported on the first egress call instead of at start: it is about 110 modules, which
 * every `svc serve` start paid for even when no deployed flow calls out (issue 22, start-up time).
 * After the first call the promise is settled and costs one microtask per use.
 */
export type Undici = typeof import('undici');

let loading: Promise<Undici> | undefined;

export function loadUndici(): Promise<Undici> {
  return (loading ??= import('undici'));
}
