/** Node's system errors, told apart by their code. */

/** True when `err` is a system error with this `code` (ENOENT, EEXIST, EPERM ...). */
export function isErrno(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as NodeJS.ErrnoException).code === code;
}
