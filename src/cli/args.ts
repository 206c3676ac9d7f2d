/** Flag parsers for the tenant, key and audit commands (beside the shared ones in options.ts). */
import { InvalidArgumentError } from 'commander';
import { SvcError } from '../common/errors.js';

/** Adapts an app/ parser to commander: its refusal (an SvcError) becomes a flag error, exit 1. */
export function svcArg<T>(parse: (text: string) => T): (value: string) => T {
  return (value) => {
    try {
      return parse(value);
    } catch (err) {
      if (err instanceof SvcError) throw new InvalidArgumentError(err.message);
      throw err;
    }
  };
}

/** Parser for a required text flag that must hold something besides spaces. */
export function nonEmptyArg(flag: string): (value: string) => string {
  return (value) => {
    if (value.trim() === '') throw new InvalidArgumentError(`${flag} must not be empty`);
    return value;
  };
}
