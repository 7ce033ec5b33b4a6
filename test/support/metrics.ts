/**
 * One sample of the Prometheus text format, summed over the lines that carry these labels (a metric
 * may have more labels than asked for); 0 when absent.
 */
export function sample(text: string, name: string, labels: Record<string, string>): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const lines = text.split('\n').filter((l) => l.startsWith(`${name}{`) && want.every((w) => l.includes(w)));
  return lines.reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}
