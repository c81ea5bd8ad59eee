import type { Readable, Writable } from 'node:stream';
import cliProgress from 'cli-progress';

/** Where a CLI run reads and writes; the real process streams, or buffers in tests. */
export interface CliIo {
  readonly stdin: Readable;
  readonly stdout: Writable;
  readonly stderr: Writable;
}

export function processIo(): CliIo {
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
}

export function line(stream: Writable, text = ''): void {
  stream.write(`${text}\n`);
}

/** Writes `value` as JSON (for `--json`), one document. */
export function printJson(io: CliIo, value: unknown): void {
  line(io.stdout, JSON.stringify(value, null, 2));
}

/** A progress bar on stderr (so stdout stays parseable); drawn only on a terminal. */
export interface Progress {
  update(done: number, payload?: Record<string, unknown>): void;
  stop(): void;
}

export function progressBar(io: CliIo, total: number, label: string, enabled = true): Progress {
  const tty = (io.stderr as Writable & { isTTY?: boolean }).isTTY === true;
  if (!enabled || !tty || total === 0) return { update: () => undefined, stop: () => undefined };
  const bar = new cliProgress.SingleBar({
    stream: io.stderr as NodeJS.WritableStream,
    format: `${label} [{bar}] {value}/{total} {percentage}% | {detail}`,
    hideCursor: true,
    clearOnComplete: false,
  }, cliProgress.Presets.shades_classic);
  bar.start(total, 0, { detail: '' });
  return {
    update: (done, payload) => bar.update(done, { detail: '', ...payload }),
    stop: () => bar.stop(),
  };
}

/** A simple aligned table for text output. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows.reduce<number[]>((w, row) => row.map((cell, i) => Math.max(w[i] ?? 0, cell.length)), []);
  return rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n');
}

/** `90s`, `15m`, `2h`, `3d` → milliseconds. */
export function parseDurationMs(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) throw new Error(`'${text}' is not a duration like 90s, 15m, 2h or 3d`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'ms' | 's' | 'm' | 'h' | 'd'];
  return Number(match[1]) * unit;
}
