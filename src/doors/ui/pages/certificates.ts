/** The Certificates page: every tenant's registered certificates with their status. */
import { listCertificatesAsConfigured, type CertificateView } from '../../../app/use-cases/certificates.js';
import { html, type Html } from '../html.js';
import { page, table } from '../layout.js';
import { paged } from '../paging.js';
import { send, type PageRoutes, type Query } from '../respond.js';

const CERT_HEADERS = ['Tenant', 'Name', 'Kind', 'Status', 'Valid to', 'Subject', 'SHA-256'];
const NONE = 'No certificates are registered. Register one with: svc cert add <path> --tenant <t> --name <n>';

/** The badge colour of a status: bad once expired or about to, good while valid, plain when replaced. */
function tone(status: string): string {
  if (status === 'expired' || status.startsWith('expires')) return 'bad';
  return status === 'valid' ? 'good' : '';
}

function certificateRow(v: CertificateView): Html {
  return html`<tr>
    <td>${v.row.tenant}</td>
    <td>${v.row.name}</td>
    <td>${v.row.kind}</td>
    <td><span class="badge ${tone(v.status)}">${v.status}</span></td>
    <td>${v.row.validTo}</td>
    <td>${v.row.subject}</td>
    <td><code>${v.row.sha256}</code></td>
  </tr>`;
}

export const certificatesPage: PageRoutes = (app, deps, context) => {
  app.get('/certificates', async (req, reply) => {
    const ctx = context(req, reply);
    const views = await listCertificatesAsConfigured(deps);
    const { rows, nav } = paged(views, '/ui/certificates', req.query as Query);
    const body = html`${table(CERT_HEADERS, rows.map(certificateRow), NONE)}${nav}`;
    return send(reply, page('Certificates', ctx, body));
  });
};
