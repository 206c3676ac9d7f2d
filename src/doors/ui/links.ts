/** Links between the pages: a delivery's story and a flow's Registry page, from wherever a row names them. */
import { html, type Html } from './html.js';

/** The delivery's story (/ui/executions/<id>), labelled with its correlation id; empty for none. */
export function deliveryLink(correlationId: string | null): Html | string {
  if (correlationId === null) return '';
  return html`<a href="/ui/executions/${encodeURIComponent(correlationId)}">${correlationId}</a>`;
}

/** The flow's Registry page (/ui/registry/<tenant>/<flow>), labelled `tenant/flow`. */
export function flowLink(tenant: string, flow: string): Html {
  return html`<a href="/ui/registry/${encodeURIComponent(tenant)}/${encodeURIComponent(flow)}">${tenant}/${flow}</a>`;
}
