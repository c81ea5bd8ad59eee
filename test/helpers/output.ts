/** Structured stdout lines (Powertools JSON logs and EMF metric blobs) written while `fn` ran. */
export interface CapturedOutput {
  readonly logs: Record<string, unknown>[];
  /** EMF documents: `{ _aws: { CloudWatchMetrics: [...] }, <metric>: value, <dimension>: value }`. */
  readonly metrics: Record<string, unknown>[];
}

/**
 * Captures what Powertools writes while `fn` runs (through `process.stdout`, and `process.stderr`
 * for warnings and errors), so tests can assert on log lines and metrics without mocking either.
 */
export async function captureOutput<T>(fn: () => Promise<T>): Promise<{ value: T; output: CapturedOutput }> {
  const lines: string[] = [];
  const restore = [process.stdout, process.stderr].map((stream) => {
    const original = stream.write.bind(stream);
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      lines.push(...String(chunk).split('\n').filter((line) => line.startsWith('{')));
      return (original as (...args: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof stream.write;
    return () => void (stream.write = original);
  });
  try {
    const value = await fn();
    const parsed = lines.flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
    return { value, output: { logs: parsed.filter((doc) => !('_aws' in doc)), metrics: parsed.filter((doc) => '_aws' in doc) } };
  } finally {
    for (const undo of restore) undo();
  }
}

/** Sum of one metric across EMF documents, optionally only those with `dimensions` (e.g. `{ reason }`). */
export function metricTotal(output: CapturedOutput, name: string, dimensions: Record<string, string> = {}): number {
  return output.metrics
    .filter((doc) => Object.entries(dimensions).every(([key, value]) => doc[key] === value))
    .reduce((sum, doc) => {
      const value = doc[name];
      if (typeof value === 'number') return sum + value;
      if (Array.isArray(value)) return sum + value.reduce((a: number, b: number) => a + b, 0);
      return sum;
    }, 0);
}
