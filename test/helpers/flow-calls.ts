/** A delivery sent the way a client sends it: POST /flows/<tenant>/<flow>/run or /enqueue with a key, a correlation id and a JSON body. */
export async function sendDelivery(
  base: string,
  key: string,
  target: { tenant: string; flow: string; door: 'run' | 'enqueue' },
  correlationId: string,
  body: unknown,
): Promise<number> {
  const res = await fetch(`${base}/flows/${target.tenant}/${target.flow}/${target.door}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-correlation-id': correlationId },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}
