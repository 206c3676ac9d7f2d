/** The name rule shared by tenants, flows, queue targets, route path components and CLI flags. */

/** The characters of a name (the length is checked apart, in bytes). */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9_-]*$/;
export const NAME_MAX_BYTES = 128;

/** True when `value` may become a path component: [a-z0-9][a-z0-9_-]*, 1 to 128 bytes. */
export function isValidName(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= NAME_MAX_BYTES && NAME_PATTERN.test(value);
}

/** Explains why `value` breaks the name rule, or returns undefined when it follows it. */
export function nameProblem(value: string): string | undefined {
  if (value.length === 0) return 'is empty';
  if (Buffer.byteLength(value) > NAME_MAX_BYTES) return `is longer than ${NAME_MAX_BYTES} bytes`;
  if (!/^[a-z0-9]/.test(value)) return 'must start with a lowercase letter or digit';
  if (!NAME_PATTERN.test(value)) return 'may hold only lowercase letters, digits, "-" and "_"';
  return undefined;
}

/** The sentence every refusal uses, e.g. `tenant "Acme" must start with a lowercase letter or digit`. */
export function describeNameProblem(what: string, value: string): string | undefined {
  const problem = nameProblem(value);
  return problem === undefined
    ? undefined
    : `${what} "${value}" ${problem} (names use lowercase letters, digits, "-" and "_", start with a letter or digit, 1 to 128 bytes)`;
}
