/**
 * The node's network as the plugin reads and changes it: iproute2's `ip`, which every Kubernetes
 * node has, run in the runtime's network namespace (the node's). JSON output (`ip -j`) for reads.
 */
import { CNI_ERROR, CniError } from './errors.js';
import type { IpCommand, Route, Rule } from './source-routing.js';

/** What the plugin needs of the node's network. */
export interface HostNetwork {
  rules(): Promise<Rule[]>;
  routes(table: number): Promise<Route[]>;
  /** The link whose MAC address is `mac`, if the node has one. */
  linkByMac(mac: string): Promise<string | undefined>;
  run(commands: readonly IpCommand[]): Promise<void>;
}

/** node:child_process, loaded on the first `ip`: an ADD that routes nothing starts without it. */
const childProcess = () => process.getBuiltinModule('node:child_process');

/** `HostNetwork` over the `ip` command, each call bounded by `signal`. */
export function iproute(signal: AbortSignal, binary = 'ip'): HostNetwork {
  const ip = async (args: readonly string[]) => {
    const { execFile } = childProcess();
    return new Promise<string>((resolve, reject) => {
      execFile(binary, [...args], { signal, encoding: 'utf8' }, (error, stdout, stderr) => {
        if (error) {
          reject(
            new CniError(
              CNI_ERROR.routing,
              `ip ${args.join(' ')}: ${stderr.trim() || error.message}`,
            ),
          );
        } else resolve(stdout);
      });
    });
  };
  const json = async <T>(args: readonly string[]): Promise<T[]> => {
    const out = (await ip(['-j', ...args])).trim();
    return out === '' ? [] : (JSON.parse(out) as T[]);
  };
  return {
    rules: () => json<Rule>(['-4', 'rule', 'show']),
    routes: (table) => json<Route>(['-4', 'route', 'show', 'table', String(table)]),
    async linkByMac(mac) {
      const links = await json<{ ifname: string; address?: string }>(['link', 'show']);
      return links.find((link) => link.address?.toLowerCase() === mac.toLowerCase())?.ifname;
    },
    async run(commands) {
      if (commands.length === 0) return;
      // One process for all of them: `ip -4 -batch` stops at the first that fails. Options go
      // before -batch, so every command is IPv4 and its own `-4` is dropped.
      const lines = commands.map((command) => (command[0] === '-4' ? command.slice(1) : command));
      const { execFile } = childProcess();
      await new Promise<void>((resolve, reject) => {
        const child = execFile(
          binary,
          ['-4', '-batch', '-'],
          { signal, encoding: 'utf8' },
          (error, _out, stderr) => {
            if (!error) return resolve();
            reject(
              new CniError(
                CNI_ERROR.routing,
                `ip -batch (${commands.map((c) => c.join(' ')).join('; ')}): ${stderr.trim() || error.message}`,
              ),
            );
          },
        );
        child.stdin?.end(`${lines.map((line) => line.join(' ')).join('\n')}\n`);
      });
    },
  };
}
