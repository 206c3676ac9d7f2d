/** The flow of the /run benchmarks: a validate step and an ntd answer, at log_level event_only. */
export const QUOTE_FLOW = `---
flowdoc_version: "0.1"
flow: quote
tenant: bench
log_level: event_only
---

## Step: check
\`\`\`validate
has(ctx.input.id) | id is required | syntactic
\`\`\`

## Step: answer
\`\`\`ntd
{"id": "{{ ctx.input.id }}", "total": {{ ctx.input.total }}, "status": "accepted"}
\`\`\`
`;

/**
 * The flow of the svc test and replay benchmarks: two validate rules, one call out to
 * `<pricing>/price/<id>` and a 201 answer of `answer` (an ntd JSON template).
 */
export function pricedQuoteFlow(name: string, pricing: string, answer: string): string {
  return `---
flowdoc_version: "0.1"
flow: ${name}
tenant: bench
effects: [http_egress]
---

## Step: check
\`\`\`validate
has(ctx.input.id) | id is required | syntactic
ctx.input.qty > 0 | qty must be positive | semantic
\`\`\`

## Step: price
endpoint: ${pricing}/price/{{ ctx.input.id }}
method: GET

## Step: answer
response_status: 201
\`\`\`ntd
${answer}
\`\`\`
`;
}
