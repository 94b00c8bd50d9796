/**
 * berth-cni's node agent (`berth-cni.mjs agent`, a container of berth-cni's DaemonSet): learns the
 * node's address set from berth, returns what berth wants back and no container holds, and
 * reports the node's use at watermarks. It reads the plugin's own network configuration, so both
 * share one endpoint, node name and data directory. One line per pass that did something; berth
 * unreachable is logged and retried, and pods keep starting from the set on disk meanwhile.
 */
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { AGENT_PASS_MS, type AgentPass, agentPass, type LastReport } from './handout/agent.js';
import { bootId } from './handout/boot.js';
import { HandoutStore } from './handout/store.js';
import { withHostLock } from './host-lock.js';
import { type NetworkConfig, parseNetworkConfig } from './netconf.js';
import { NodeIpClient } from './node-ip-client.js';

/** The plugin's network configuration, as the installer wrote it for this node. */
const CONFIG_FILE = process.env.BERTH_CNI_CONFIG ?? '/host/etc/cni/net.d/05-berth.conflist';
/** The node's lock, shared with the plugin (cni/main.ts). */
const LOCK_FILE = process.env.BERTH_CNI_LOCK ?? '/run/berth-cni.lock';
/** How often the agent looks at the node's use. */
const PASS_MS = Number(process.env.BERTH_CNI_AGENT_PASS_MS ?? AGENT_PASS_MS);

/** The berth-cni plugin's configuration out of the conflist. */
async function pluginConfig(path: string): Promise<NetworkConfig> {
  const list = JSON.parse(await readFile(path, 'utf8')) as {
    cniVersion?: string;
    name?: string;
    plugins?: { ipam?: { type?: string } }[];
  };
  const plugin = list.plugins?.find((p) => p.ipam?.type === 'berth-cni');
  if (!plugin) throw new Error(`${path}: no plugin with "ipam": {"type": "berth-cni"}`);
  return parseNetworkConfig(
    JSON.stringify({ cniVersion: list.cniVersion, name: list.name, ipam: plugin.ipam }),
  );
}

function said(pass: AgentPass): string {
  return `reported: ${pass.inUse} in use, ${pass.free} free, ${pass.returned} returned`;
}

const config = await pluginConfig(CONFIG_FILE);
const store = new HandoutStore(config.ipam.dataDir);
const boot = bootId();
// No container outlives a reboot: what earlier boots leased is free again.
const dropped = await withHostLock(LOCK_FILE, 'exclusive', Date.now() + 60_000, async () =>
  store.dropLeasesNotOf(boot),
);
process.stdout.write(
  `berth-cni agent for node ${config.ipam.node}: ${dropped} leases of earlier boots dropped\n`,
);
let last: LastReport | undefined;
for (;;) {
  try {
    const client = new NodeIpClient(config.ipam, AbortSignal.timeout(config.ipam.timeoutMs));
    const pass = await agentPass(store, client, last, Date.now());
    last = pass.last;
    if (pass.reported) process.stdout.write(`${said(pass)}\n`);
  } catch (error) {
    process.stderr.write(
      `berth-cni agent: ${error instanceof Error ? error.message : String(error)}; retrying\n`,
    );
  }
  await sleep(PASS_MS);
}
