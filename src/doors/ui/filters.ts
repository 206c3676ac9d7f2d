/** The GET forms that filter a listing: labelled text fields and one submit button. */
import { html, type Html } from './html.js';

/** A labelled text field holding the value the listing was filtered by. */
export function filterField(name: string, label: string, value: string | undefined): Html {
  return html`<label>${label}<input name="${name}" value="${value ?? ''}" /></label>`;
}

/** A filter form: the fields, then the submit button. */
export function filterForm(fields: readonly Html[], button: string): Html {
  return html`<form method="get" class="filters">${fields}<button type="submit">${button}</button></form>`;
}
