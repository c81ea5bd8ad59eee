import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * What a running local cloud publishes about itself, so tools (the `ballast` CLI, a user's own
 * scripts) find it the way they find a deployed stack: by its outputs, plus the endpoints that
 * stand in for AWS's.
 */
export interface LocalCloudDescription {
  readonly pid: number;
  readonly stackName: string;
  readonly region: string;
  /** `AWS_ENDPOINT_URL_*` values and dummy credentials for an SDK. */
  readonly environment: Record<string, string>;
  /** The stack's outputs resolved to local values (JobsQueueUrl, ReadApiUrl, ...). */
  readonly outputs: Record<string, string>;
  readonly startedAt: string;
  /** The registry module of the app it runs (the CLI loads its workloads from it). @default - none recorded */
  readonly registry?: string;
}

/** Where `ballast dev` (`npm start`) writes its description: `.ballast/local.json` under the working directory. */
export function localCloudFile(cwd = process.cwd()): string {
  return process.env.BALLAST_LOCAL_FILE ?? join(cwd, '.ballast', 'local.json');
}

export function writeLocalCloudFile(description: LocalCloudDescription, file = localCloudFile()): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(description, null, 2)}\n`);
}

/** Reads the description, or explains how to get one; a file left by a dead process is refused. */
export function readLocalCloudFile(file = localCloudFile()): LocalCloudDescription {
  if (!existsSync(file)) throw new Error(`no local cloud is running (${file} not found): start one with 'npm start'`);
  const description = JSON.parse(readFileSync(file, 'utf8')) as LocalCloudDescription;
  try {
    process.kill(description.pid, 0);
  } catch {
    throw new Error(`the local cloud described in ${file} (pid ${description.pid}) is no longer running: start one with 'npm start'`);
  }
  return description;
}

export function removeLocalCloudFile(file = localCloudFile()): void {
  rmSync(file, { force: true });
}
