/** This boot of the node, as the kernel names it: a lease of another boot has no container left. */
import { readFile } from 'node:fs/promises';

/** Where Linux keeps a random id made at every boot (proc(5): `/proc/sys/kernel/random/boot_id`). */
const BOOT_ID = '/proc/sys/kernel/random/boot_id';

/** The boot id; `unknown` where the kernel has none to read (then no lease is ever dropped for it). */
export async function bootId(path = BOOT_ID): Promise<string> {
  return (await readFile(path, 'utf8').catch(() => 'unknown')).trim();
}
