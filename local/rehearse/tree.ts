import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { synthesize, type SynthesizedStack } from '../cloud/assembly.ts';

/** A rehearsal input that cannot be used: an unknown ref, a tree that does not build (exit 2). */
export class RehearsalInputError extends Error {
  override readonly name = 'RehearsalInputError';
}

/** One version's source tree, checked out or copied where the rehearsal can build it. */
export interface VersionTree {
  /** How the report names it: `HEAD (3f9a1c2)`, `working tree`, a directory. */
  readonly label: string;
  readonly dir: string;
  /** Differences from this checkout the build cannot honour (e.g. another package-lock.json). */
  readonly warnings: readonly string[];
  /** Removes the worktree or copy. */
  remove(): void;
}

const git = (repo: string, args: readonly string[]) => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** The tree of `ref` as a detached git worktree of `repo`. @throws RehearsalInputError for a ref git does not know */
export function treeAtRef(repo: string, ref: string): VersionTree {
  let sha: string;
  try {
    sha = git(repo, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  } catch {
    throw new RehearsalInputError(`--from/--to ${ref}: not a commit of ${repo} (try a branch, a tag or a sha: git log --oneline)`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'ballast-rehearse-'));
  git(repo, ['worktree', 'add', '--detach', '--force', dir, sha]);
  return finish(repo, dir, `${ref} (${sha.slice(0, 7)})`, () => {
    try {
      git(repo, ['worktree', 'remove', '--force', dir]);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      git(repo, ['worktree', 'prune']);
    }
  });
}

/**
 * A copy of a directory's files: the working tree of `repo` (tracked and untracked files that are
 * not ignored, uncommitted changes included), or any directory (everything but `node_modules` and `.git`).
 */
export function treeCopy(source: string, label: string, repo = source): VersionTree {
  const from = resolve(source);
  if (!existsSync(join(from, 'cdk.json'))) {
    throw new RehearsalInputError(`${label}: ${from} has no cdk.json, so it is not a CDK project to rehearse`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'ballast-rehearse-'));
  let files: string[] | undefined;
  try {
    if (existsSync(join(from, '.git')) || from === resolve(repo)) {
      files = execFileSync('git', ['-C', from, 'ls-files', '-co', '--exclude-standard', '-z'], { encoding: 'utf8' }).split('\0').filter(Boolean);
    }
  } catch {
    files = undefined;
  }
  if (files) {
    for (const file of files) {
      if (!existsSync(join(from, file))) continue;
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      copyFileSync(join(from, file), join(dir, file));
    }
  } else {
    cpSync(from, dir, { recursive: true, filter: (path) => !/[/\\](node_modules|\.git)([/\\]|$)/.test(path.slice(from.length)) });
  }
  return finish(repo, dir, label, () => rmSync(dir, { recursive: true, force: true }));
}

/** Links this checkout's packages into the tree (the build runs with them) and notes a lockfile that differs. */
function finish(repo: string, dir: string, label: string, remove: () => void): VersionTree {
  const warnings: string[] = [];
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(resolve(repo), 'node_modules'), join(dir, 'node_modules'), 'dir');
  const lock = (root: string) => (existsSync(join(root, 'package-lock.json')) ? readFileSync(join(root, 'package-lock.json'), 'utf8') : '');
  if (lock(dir) !== lock(repo)) warnings.push(`${label}: its package-lock.json differs from this checkout's; it was built with this checkout's node_modules`);
  return { label, dir, warnings, remove };
}

/**
 * Synthesizes a tree's CDK app (the `app` of its own `cdk.json`, bundling its own functions), as
 * `cdk deploy` would from that tree.
 *
 * @throws RehearsalInputError when the app does not synthesize (a dirty build), with what it printed
 */
export async function buildVersion(tree: VersionTree, context: Record<string, unknown>): Promise<SynthesizedStack> {
  try {
    const stacks = await synthesize({ appDir: tree.dir, context });
    const [stack] = stacks;
    if (!stack || stacks.length !== 1) throw new Error(`the app synthesized ${stacks.length} stacks; a rehearsal runs exactly one`);
    return stack;
  } catch (error) {
    throw new RehearsalInputError(`${tree.label} does not build: ${(error as Error).message}`);
  }
}

/** The `WORKER_VERSION` of the function behind the stack's CodeDeploy-deployed alias, as synthesized. */
export function deployedWorkerVersion(stack: SynthesizedStack): string | undefined {
  const resources = stack.template.Resources;
  const alias = Object.values(resources).find((r) => r.Type === 'AWS::Lambda::Alias' && r.UpdatePolicy?.CodeDeployLambdaAliasUpdate);
  const functionId = (alias?.Properties?.FunctionName as { Ref?: string } | undefined)?.Ref;
  const variables = (resources[functionId ?? '']?.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables;
  return typeof variables?.WORKER_VERSION === 'string' ? variables.WORKER_VERSION : undefined;
}
