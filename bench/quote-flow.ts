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
