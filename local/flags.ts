import { parseArgs, type ParseArgsConfig } from 'node:util';

/**
 * A script's flags, parsed the way every `npm run` script here treats them: an unknown or
 * malformed flag prints the problem and `help` and exits 2; `--help` (declare it among the
 * options) prints `help` and exits 0.
 */
export function scriptFlags<const T extends ParseArgsConfig>(config: T, help: string): ReturnType<typeof parseArgs<T>>['values'] {
  let values: ReturnType<typeof parseArgs<T>>['values'];
  try {
    values = parseArgs(config).values;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${help}\n`);
    process.exit(2);
  }
  if ((values as { help?: boolean }).help) {
    process.stdout.write(`${help}\n`);
    process.exit(0);
  }
  return values;
}

/** A numeric flag in [min, max] (a whole number when `integer`), or exit 2 naming the flag. */
export function numberFlag(value: unknown, name: string, min: number, max: number, integer = false): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number < min || number > max || (integer && !Number.isInteger(number))) {
    process.stderr.write(`--${name} must be ${integer ? 'a whole number' : 'a number'} in [${min}, ${max}], got '${String(value)}'\n`);
    process.exit(2);
  }
  return number;
}
