/** The built-in `secret_read` effect: `SVC_SECRET_<KEY>` from the environment into `ctx.<key>`, on every execution. */
import { EgressError } from '../../common/errors.js';
import { envName } from '../execution.js';
import type { EffectCall, EffectResult } from '../types.js';

/** The key a step reads: its `key`, else its name with `-` and `.` replaced by `_`. */
export function secretKeyOf(step: { name: string; secretKey?: string }): string {
  return step.secretKey ?? step.name.replace(/[-.]/g, '_');
}

/**
 * Reads the secret at each execution (a rotated value is picked up without restart). The value is
 * placed only in the context, never in the output or a log row; the message passes through.
 * An unset variable fails the step as a failed call out (502), set-but-empty is a value.
 */
export function secretRead(call: EffectCall): EffectResult {
  const key = secretKeyOf(call.step);
  const variable = envName('SVC_SECRET_', key);
  const value = call.env[variable];
  if (value === undefined) {
    throw new EgressError(
      call.step.name,
      `step '${call.step.name}': secret_read: environment variable ${variable} is not set (key '${key}')`,
    );
  }
  call.ctx[key] = value;
  return { output: call.message };
}
