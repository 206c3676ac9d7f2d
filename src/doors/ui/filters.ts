/** The GET forms that filter a listing: labelled text fields and choices, one submit button, and the refusal of a value. */
import { html, type Html } from './html.js';

/** A labelled text field holding the value the listing was filtered by. */
export function filterField(name: string, label: string, value: string | undefined, placeholder = ''): Html {
  return html`<label>${label}<input name="${name}" value="${value ?? ''}" placeholder="${placeholder}" /></label>`;
}

/**
 * A labelled choice: "any" (the empty value) first, then `options` as [value, label]. A value
 * the listing was filtered by that is not among them (one written in the URL) is offered too when
 * `acceptsOther` says the search reads it, so the form shows what was searched; a refused one is
 * not offered as a choice (the refusal names it).
 */
export function filterSelect(
  name: string,
  label: string,
  options: readonly (readonly [string, string])[],
  value: string | undefined,
  acceptsOther: (value: string) => boolean = () => false,
): Html {
  const all: (readonly [string, string])[] = [['', 'any'], ...options];
  if (value !== undefined && value !== '' && !all.some(([v]) => v === value) && acceptsOther(value))
    all.push([value, value]);
  return html`<label
    >${label}<select name="${name}">
      ${all.map(([v, l]) => html`<option value="${v}" ${v === (value ?? '') ? 'selected' : ''}>${l}</option>`)}
    </select></label
  >`;
}

/** A filter form: the fields, then the submit button. */
export function filterForm(fields: readonly Html[], button: string): Html {
  return html`<form method="get" class="filters">${fields}<button type="submit">${button}</button></form>`;
}

/** Why a filter value was refused: said instead of the listing, which is not shown (it would be wider than asked). */
export function filterRefusal(message: string): Html {
  return html`<div class="error" role="alert">Nothing was searched: ${message}.</div>`;
}
