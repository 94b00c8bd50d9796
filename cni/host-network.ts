/**
 * The node's network as the plugin reads and changes it: iproute2's `ip`, which every Kubernetes
 * node has, run in the runtime's network namespace (the node's). JSON output (`ip -j`) for reads.
 */
import { CNI_ERROR, CniError, shown } from './errors.js';
import { runProgram } from './program.js';
import type { IpCommand, Route, Rule } from './source-routing.js';

/** A link as `ip -j link show` lists it. */
export interface Link {
  readonly ifname: string;
  readonly address?: string;
}

/** The node's links and IPv4 policy rules, read at one instant. */
export interface RoutingView {
  readonly links: readonly Link[];
  readonly rules: readonly Rule[];
}

/**
 * The `ip` run that reads a `RoutingView` in one process: a batch of two reads, which `ip -j`
 * answers with one JSON array a line.
 */
export const ROUTING_READ = {
  command: ['ip', '-j', '-4', '-batch', '-'],
  input: 'link show\nrule show\n',
} as const;

/** The view `ROUTING_READ` printed. */
export function parseRoutingView(stdout: string): RoutingView {
  const [links, rules, ...rest] = stdout.split('\n').filter((line) => line.trim() !== '');
  if (links === undefined || rules === undefined || rest.length > 0) {
    throw new CniError(
      CNI_ERROR.routing,
      `ip ${ROUTING_READ.command.slice(1).join(' ')} answered ${shown(stdout.slice(0, 200))}, not the links and the rules`,
    );
  }
  return { links: JSON.parse(links) as Link[], rules: JSON.parse(rules) as Rule[] };
}

/** The link whose MAC address is `mac`, if the node has one. */
export function linkWithMac(view: RoutingView, mac: string): string | undefined {
  return view.links.find((link) => link.address?.toLowerCase() === mac.toLowerCase())?.ifname;
}

/** What the plugin needs of the node's network. */
export interface HostNetwork {
  view(): Promise<RoutingView>;
  routes(table: number): Promise<Route[]>;
  run(commands: readonly IpCommand[]): Promise<void>;
}

/** `HostNetwork` over the `ip` command, each run ended by `deadline` (epoch ms) at the latest. */
export function iproute(deadline: number, binary = 'ip'): HostNetwork {
  const ip = async (
    args: readonly string[],
    input = '',
    what = `ip ${args.join(' ')}`,
  ): Promise<string> => {
    const ran = runProgram(binary, args, input, deadline);
    if (ran.status === 0) return ran.stdout;
    const why = ran.timedOut
      ? 'no answer before the deadline'
      : (ran.error?.message ?? (ran.stderr.trim() || `exit ${ran.status}`));
    throw new CniError(CNI_ERROR.routing, `${what}: ${why}`);
  };
  return {
    view: async () => parseRoutingView(await ip(ROUTING_READ.command.slice(1), ROUTING_READ.input)),
    routes: async (table) => {
      const out = (await ip(['-j', '-4', 'route', 'show', 'table', String(table)])).trim();
      return out === '' ? [] : (JSON.parse(out) as Route[]);
    },
    async run(commands) {
      if (commands.length === 0) return;
      // One process for all of them: `ip -4 -batch` stops at the first that fails. Options go
      // before -batch, so every command is IPv4 and its own `-4` is dropped.
      const lines = commands.map((command) => (command[0] === '-4' ? command.slice(1) : command));
      await ip(
        ['-4', '-batch', '-'],
        `${lines.map((line) => line.join(' ')).join('\n')}\n`,
        `ip -batch (${commands.map((c) => c.join(' ')).join('; ')})`,
      );
    },
  };
}
