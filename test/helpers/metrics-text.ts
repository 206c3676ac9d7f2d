/** Reading the Prometheus text exposition in black-box tests. */

/** The value of one sample, by its exact series (`name{labels}`), or undefined. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}
