/** A candidate flow as replay and `svc test` run it: compiled from a file, never deployed. */
import type { LoadedFlow } from '../../engine/index.js';
import type { FlowIR } from '../../ir/types.js';

/** The compiled candidate as a loaded flow: version `candidate`, published now. */
export function candidateFlow(ir: FlowIR, hash: string): LoadedFlow {
  return { ir, version: 'candidate', hash, created_at: new Date().toISOString() };
}
