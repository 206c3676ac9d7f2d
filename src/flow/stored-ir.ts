/**
 * Artifacts stored by an older svc, brought to the current IR when they are loaded: the one place an
 * old IR shape is read. Artifacts are immutable and cached by hash, so this runs once per artifact.
 */
import { IntegrityError } from '../common/errors.js';
import { IR_VERSION, type FlowIR } from '../ir/types.js';
import { lowerCorrelation, type CorrelationSource } from './correlation-decl.js';

/** IR version 1: the current IR but for `correlation`, which held the front-matter mappings as written. */
export type FlowIRv1 = Omit<FlowIR, 'irVersion' | 'correlation'> & { irVersion: 1; correlation?: CorrelationSource };

/**
 * The current IR of a parsed artifact (`hash` names it in errors). A version-1 artifact's correlation
 * declaration is checked and typed here, as the compiler does; the compiler only started refusing a
 * malformed one after such artifacts could be published, so one may still carry it.
 * @throws IntegrityError for an IR version this svc does not read, or a version-1 correlation
 *   declaration that breaks the rules (the artifact cannot run; the flow must be fixed and re-deployed)
 */
export function upgradeStoredIr(stored: FlowIR | FlowIRv1, hash: string): FlowIR {
  if (stored.irVersion === IR_VERSION) return stored;
  if (stored.irVersion !== 1) {
    throw new IntegrityError(
      `artifact ${hash} holds IR version ${JSON.stringify((stored as { irVersion?: unknown }).irVersion)}; this svc reads versions 1 to ${IR_VERSION}`,
    );
  }
  if (stored.correlation === undefined) return { ...stored, irVersion: IR_VERSION, correlation: undefined };
  const lowered = lowerCorrelation(stored.correlation);
  if (lowered.ir === undefined) {
    const problems = lowered.problems.map((p) => p.message).join('; ');
    throw new IntegrityError(
      `artifact ${hash} of ${stored.tenant}/${stored.flow} has a malformed correlation declaration (${problems}); fix the flow and re-deploy it under a new version`,
    );
  }
  // Spread keeps each key in its place, so the object reads like a freshly compiled one.
  return { ...stored, irVersion: IR_VERSION, correlation: lowered.ir };
}
