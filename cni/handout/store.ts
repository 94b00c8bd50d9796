/**
 * The node's durable record of the addresses it hands out, under one directory that survives a
 * restart of the agent and a reboot of the node (`/var/lib/berth-cni` by default), as the
 * reference `host-local` IPAM keeps `/var/lib/cni/networks/<network>` (containernetworking/
 * plugins plugins/ipam/host-local/backend/disk/backend.go at v1.5.1: one file per address,
 * created only if absent, naming its container and interface):
 *
 * - `set.json`: the node's set as berth last gave it (written whole, by rename);
 * - `leases/<ip>`: the container and interface holding the address, created exclusively
 *   (`O_EXCL`), so two containers can never hold one address whatever runs at once or crashes;
 * - `rested/<ip>`: the last release (pod and time), for the cooldown and sticky reuse;
 * - `returned/<ip>`: a wanted address the node returns to berth, by the record it returns.
 *
 * A lease is removed only by the DEL of its own container (under the node's exclusive lock), or
 * by the agent for a container of an earlier boot: a reboot ends every container.
 */
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { NodeSet } from '../../shared/eni/handout/wire.js';
import type { NodeUseNow, Rest } from './choice.js';

/** One container's hold on one address. */
export interface Lease {
  readonly ip: string;
  readonly containerId: string;
  readonly ifName: string;
  /** The pod, `namespace/name`. */
  readonly pod: string;
  /** Epoch ms. */
  readonly since: number;
  /** The boot the lease was made in (`/proc/sys/kernel/random/boot_id`). */
  readonly boot: string;
}

/** How far a return has come: written before the node checks it is empty, then confirmed so. */
export type ReturnStage = 'checking' | 'empty';

/** A wanted address the node is returning. */
export interface Return {
  readonly ip: string;
  /** The record returned (berth's `createdAt`): a record made since is a new address. */
  readonly createdAt: number;
  readonly stage: ReturnStage;
}

/** How a file being written is named: hidden until it is renamed or linked into place. */
const TEMPORARY_MARK = '.';

/** Whether `error` is a filesystem error with `code`. */
const isCode = (error: unknown, code: string) => (error as { code?: unknown })?.code === code;

/** An IPv4 address as a file name: only digits and dots ever reach the path. */
function fileName(ip: string): string {
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(ip)) throw new RangeError(`not an IPv4 address: ${ip}`);
  return ip;
}

/** The node's files read at one instant. */
export interface Snapshot {
  readonly leases: readonly Lease[];
  readonly returns: readonly Return[];
  readonly use: NodeUseNow;
}

/**
 * The node's handout files under `root`.
 *
 * Every file call is synchronous, behind methods that stay async for their callers: the plugin
 * is a short process doing one thing at a time, where each awaited file call is a hop through
 * libuv's thread pool and back through the event loop. An ADD on a node holding 100 pods reads
 * a few hundred small files; through `fs/promises` that took 7 to 11 ms, synchronously under
 * 1.5 ms. The agent, the other user, does nothing else while it reads them.
 */
export class HandoutStore {
  readonly #root: string;

  constructor(root: string) {
    this.#root = root;
  }

  get root(): string {
    return this.#root;
  }

  /** The set last learned; undefined before the agent first learned one (the earlier way). */
  async readSet(): Promise<NodeSet | undefined> {
    let text: string;
    try {
      text = readFileSync(join(this.#root, 'set.json'), 'utf8');
    } catch (error) {
      if (isCode(error, 'ENOENT')) return undefined;
      throw error;
    }
    return setIn(text);
  }

  /** Keeps `set` unless the one on disk is newer; answers the set kept. */
  async writeSet(set: NodeSet): Promise<NodeSet> {
    const current = await this.readSet().catch(() => undefined);
    if (current !== undefined && current.asOf > set.asOf) return current;
    this.#writeWhole('set.json', JSON.stringify(set));
    return set;
  }

  /** Every lease on the node. */
  async leases(): Promise<Lease[]> {
    return this.#readAll<Lease>('leases');
  }

  /** The lease of one container's interface, if it holds one. */
  async leaseOf(containerId: string, ifName: string): Promise<Lease | undefined> {
    return (await this.leases()).find((l) => l.containerId === containerId && l.ifName === ifName);
  }

  /**
   * Takes `lease.ip` for its container: false when another container holds it already. The lease
   * is written whole to a file of its own and then linked to its name, which `link(2)` does only
   * if no file has that name: the name is taken exclusively and names a whole lease from the
   * first instant, so a crash never leaves a half-written lease that no DEL could match.
   */
  async tryLease(lease: Lease): Promise<boolean> {
    const directory = join(this.#root, 'leases');
    const temporary = this.#writeTemporary(directory, JSON.stringify(lease));
    try {
      linkSync(temporary, join(directory, fileName(lease.ip)));
      return true;
    } catch (error) {
      if (isCode(error, 'EEXIST')) return false;
      throw error;
    } finally {
      rmSync(temporary, { force: true });
    }
  }

  /** Removes the lease of `ip` only while `containerId`'s interface holds it. */
  async dropLease(ip: string, containerId: string, ifName: string): Promise<boolean> {
    const path = join(this.#root, 'leases', fileName(ip));
    const lease = readJson<Lease>(path);
    if (lease?.containerId !== containerId || lease.ifName !== ifName) return false;
    rmSync(path, { force: true });
    return true;
  }

  /** Removes every lease made in a boot other than `boot`: no container outlives a reboot. */
  async dropLeasesNotOf(boot: string): Promise<number> {
    let dropped = 0;
    for (const lease of await this.leases()) {
      if (lease.boot === boot) continue;
      rmSync(join(this.#root, 'leases', fileName(lease.ip)), { force: true });
      dropped++;
    }
    return dropped;
  }

  /**
   * Removes the hidden files of writes a crash cut short, once older than `graceMs`: they hold
   * no address (a lease exists only by its name), they only take room.
   */
  async sweepUnfinished(now: number, graceMs: number): Promise<number> {
    let swept = 0;
    for (const directory of ['', 'leases', 'rested', 'returned']) {
      const path = join(this.#root, directory);
      for (const name of this.#names(path).filter((n) => n.startsWith(TEMPORARY_MARK))) {
        const file = join(path, name);
        const written = statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? now;
        if (now - written < graceMs) continue;
        rmSync(file, { force: true });
        swept++;
      }
    }
    return swept;
  }

  /** Records `ip`'s release by `pod` at `at`. */
  async rest(ip: string, rest: Rest): Promise<void> {
    this.#writeWhole(join('rested', fileName(ip)), JSON.stringify(rest));
  }

  /** The last release of every address released on the node. */
  async rested(): Promise<Map<string, Rest>> {
    return new Map(this.#readAllNamed<Rest>('rested'));
  }

  /** The returns under way or made. */
  async returns(): Promise<Return[]> {
    return this.#readAll<Return>('returned');
  }

  /** Records a return at `stage` (durably: a confirmed return must survive a reboot). */
  async markReturn(entry: Return): Promise<void> {
    this.#writeWhole(join('returned', fileName(entry.ip)), JSON.stringify(entry));
  }

  /** Forgets a return: called off while checking, or its address gone from the set. */
  async forgetReturn(ip: string): Promise<void> {
    rmSync(join(this.#root, 'returned', fileName(ip)), { force: true });
  }

  /** The leases, returns and use, each read once. */
  async snapshot(): Promise<Snapshot> {
    const leases = await this.leases();
    const returns = await this.returns();
    const rested = await this.rested();
    const use = {
      leased: new Set(leases.map((l) => l.ip)),
      returned: new Map(returns.map((r) => [r.ip, r.createdAt])),
      rested,
    };
    return { leases, returns, use };
  }

  /** Writes a file whole: a reader sees the old content or the new, never part of either. */
  #writeWhole(relative: string, content: string): void {
    const path = join(this.#root, relative);
    const directory = join(path, '..');
    renameSync(this.#writeTemporary(directory, content), path);
    const parent = openSync(directory, 'r');
    try {
      fsyncSync(parent);
    } finally {
      closeSync(parent);
    }
  }

  /**
   * Writes `content` durably to a new hidden file in `directory` and answers its path. A crash
   * can leave one behind: readers pass over hidden names, and the agent sweeps old ones away.
   */
  #writeTemporary(directory: string, content: string): string {
    mkdirSync(directory, { recursive: true, mode: 0o700 });
    // Unique per writer (node:crypto would cost the plugin's start more than it gains here).
    const temporary = join(
      directory,
      `${TEMPORARY_MARK}${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}.tmp`,
    );
    const file = openSync(temporary, 'w', 0o600);
    try {
      writeFileSync(file, content);
      fsyncSync(file);
    } finally {
      closeSync(file);
    }
    return temporary;
  }

  /** The names in `path`; none when it does not exist yet. */
  #names(path: string): string[] {
    try {
      return readdirSync(path);
    } catch (error) {
      if (isCode(error, 'ENOENT')) return [];
      throw error;
    }
  }

  #readAll<T>(directory: string): T[] {
    return this.#readAllNamed<T>(directory).map(([, value]) => value);
  }

  #readAllNamed<T>(directory: string): [string, T][] {
    const path = join(this.#root, directory);
    return this.#names(path).flatMap((name): [string, T][] => {
      if (name.startsWith(TEMPORARY_MARK)) return [];
      const value = readJson<T>(join(path, name));
      return value === undefined ? [] : [[name, value]];
    });
  }
}

/**
 * The set as the node wrote it: checked whole against the wire schema when it came from berth
 * (node-ip-client.ts), so only its shape is looked at here. The plugin reads it on every ADD and
 * must start fast, without the schema library; each address it hands out is checked again
 * (answer.ts) before anything on the node changes.
 */
function setIn(text: string): NodeSet | undefined {
  const set = JSON.parse(text) as Partial<NodeSet> | null;
  return set !== null && typeof set === 'object' && Array.isArray(set.addresses)
    ? (set as NodeSet)
    : undefined;
}

/** A JSON file's content; undefined when it is absent, or was left half-written by a crash. */
function readJson<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch (error) {
    if (isCode(error, 'ENOENT') || error instanceof SyntaxError) return undefined;
    throw error;
  }
}
