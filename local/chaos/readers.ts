import { setTimeout as sleep } from 'node:timers/promises';
import type { CachedEntity } from '../../shared/cache/index.ts';

/** What one reader was answered: the chaos run's witness for `staleReads`. */
export interface ObservedRead {
  readonly entity: string;
  readonly id: string;
  /** When the request left the reader (`Date.now()`): the read API saw it later, never earlier. */
  readonly sentAtMs: number;
  /** The version answered; 0 for a 404 (the item not there: `staleReads` holds it to nothing). */
  readonly version: number;
  /** The read API's `x-cache` header: hit, miss or bypass. */
  readonly source: string;
}

export interface ReadersOptions {
  readonly readApiUrl: string;
  /** Per group of readers, the paths it polls (`<route>/<id>`), hottest first. */
  readonly paths: readonly (readonly string[])[];
  /** The cached entities, to name what a path reads. */
  readonly entities: readonly CachedEntity[];
  readonly random: () => number;
  /**
   * The resource of a job sent a moment ago (undefined when there is none): every other read goes
   * to its item, about to be written, so reads meet commits and their invalidations rather than
   * settled items. @default - every read from `paths`
   */
  readonly recentlySent?: () => string | undefined;
  /** Readers per group of paths. @default 3 */
  readonly readersPerGroup?: number;
  /** Pause between one reader's requests. @default 20 */
  readonly pauseMs?: number;
}

/** A request the read API has not answered by then is given up (its longest table read is held 3.5 s). */
const READ_TIMEOUT_MS = 30_000;

export interface Readers {
  /** Stops the readers and resolves with every answer they were given (requests that failed are left out). */
  stop(): Promise<readonly ObservedRead[]>;
}

/**
 * Readers on the read API the whole time, a few per group of paths, favouring the front of each list:
 * they fill the cache while invalidations land, and record every answer so the run can check
 * that none was older than an invalidation that had already run. Every other read chases the
 * resource of a job just sent, and a read answered by a miss is followed at once by another of
 * the same item.
 */
export function startReaders(options: ReadersOptions): Readers {
  const routes = new Map(options.entities.flatMap((entity) => (entity.route === undefined ? [] : [[entity.route, entity.name] as const])));
  // Named before the first request: a path no entity serves is the workload's mistake, said at once.
  const lists = options.paths.filter((paths) => paths.length > 0).map((paths) => paths.map((path) => {
    const [route = '', id = ''] = path.split('/');
    const entity = routes.get(route);
    if (entity === undefined) throw new Error(`chaos readers: no cached entity has the route /${route} (path ${path})`);
    return { path, entity, id };
  }));
  // Every path by the id it reads, to chase a job's resource.
  const byId = new Map(lists.flat().map((target) => [target.id, target]));
  const observed: ObservedRead[] = [];
  const readOnce = async (path: string, entity: string, id: string): Promise<ObservedRead | undefined> => {
    const sentAtMs = Date.now();
    const answer = await fetch(`${options.readApiUrl}${path}`, { signal: AbortSignal.timeout(READ_TIMEOUT_MS) })
      .then(async (response) => answerOf(response, await response.text()))
      .catch(() => undefined);
    if (!answer) return undefined;
    const read = { entity, id, sentAtMs, ...answer };
    observed.push(read);
    return read;
  };
  let going = true;
  const reading = Promise.all(Array.from({ length: (options.readersPerGroup ?? 3) * lists.length }, async (_, reader) => {
    const targets = lists[reader % lists.length] ?? [];
    for (let i = 0; i < 1_000_000 && going; i += 1) {
      const chased = i % 2 === 1 ? byId.get(options.recentlySent?.() ?? '') : undefined;
      const target = chased ?? targets[Math.floor(options.random() ** 2 * targets.length)];
      if (!target) break;
      const { path, entity, id } = target;
      const read = await readOnce(path, entity, id);
      // A miss filled the cache (or was refused) on its way back: the next read of the item is
      // the one that would be served what a late fill of an older version left there.
      if (read?.source === 'miss') await readOnce(path, entity, id);
      await sleep(options.pauseMs ?? 20);
    }
  }));
  return {
    async stop() {
      going = false;
      await reading;
      return observed;
    },
  };
}

/** The version and cache source of a 200 or 404; nothing for any other answer (a 500 is the read API's own failure, not a read). */
function answerOf(response: Response, body: string): { version: number; source: string } | undefined {
  // (a 404 without x-cache is a path the read API does not serve, not an item it did not find)
  const source = response.headers.get('x-cache');
  if (source === null) return undefined;
  if (response.status === 404) return { version: 0, source };
  if (response.status !== 200) return undefined;
  const version = Number((JSON.parse(body) as { version?: unknown }).version);
  return Number.isInteger(version) ? { version, source } : undefined;
}
