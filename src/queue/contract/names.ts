/** The queue contract's names: the rule a queue's tenant and flow obey, and how a worker is named to the operator. */
import { SvcError } from '../../common/errors.js';
import { describeNameProblem } from '../../common/names.js';

/** One queue: a flow of a tenant. */
export interface QueueName {
  readonly tenant: string;
  readonly flow: string;
}

/** A queue holding messages, and from when it has something to deliver. */
export interface QueueBacklog extends QueueName {
  /**
   * Epoch milliseconds: 0 when messages wait for a first delivery, else the due time of its
   * earliest scheduled retry (in the past when one is due).
   */
  readonly readyAt: number;
}

/** Throws SVC_ERR_INVALID_NAME when `tenant` or `flow` breaks the name rule. */
export function checkQueueNames(tenant: string, flow: string): void {
  const problem = describeNameProblem('tenant', tenant) ?? describeNameProblem('flow', flow);
  if (problem !== undefined) throw new SvcError('SVC_ERR_INVALID_NAME', problem);
}

/** Throws SVC_ERR_INVALID_NAME when `tenant` breaks the name rule. */
export function checkTenantName(tenant: string): void {
  const problem = describeNameProblem('tenant', tenant);
  if (problem !== undefined) throw new SvcError('SVC_ERR_INVALID_NAME', problem);
}

/** How a worker is named to the operator, by every backend. */
export function workerName(pid: number, host: string): string {
  return `pid ${pid}${pid === process.pid ? ' (this server)' : ''} on ${host}`;
}
