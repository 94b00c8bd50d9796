/** This boot of the node, as the kernel names it: a lease of another boot has no container left. */
import { readFileSync } from 'node:fs';

/** Where Linux keeps a random id made at every boot (proc(5): `/proc/sys/kernel/random/boot_id`). */
const BOOT_ID = '/proc/sys/kernel/random/boot_id';

/**
 * The boot id; `unknown` where the kernel has none to read (then no lease is ever dropped for it).
 * Read synchronously: one small file, on every start of the plugin.
 */
export function bootId(path = BOOT_ID): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return 'unknown';
  }
}
