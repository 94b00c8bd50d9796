/**
 * A CNI plugin run as a container runtime runs it: the CNI environment, the network
 * configuration on stdin, the result or error result read from stdout, and the exit code. The
 * plugin tests, the e2e script and the benchmark drive berth-cni (and `ptp` chained with it)
 * through it.
 */
import { spawn } from 'node:child_process';

/** What the runtime sees of one invocation. */
export interface PluginRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout parsed, when it is JSON. */
  readonly json: Record<string, unknown> | undefined;
  readonly ms: number;
}

/**
 * One run of the plugin at `path`, timed from the spawn to the exit with its output read; `args`
 * for a program that is not a plugin (the benchmark times a bare `node -e 0` the same way).
 */
export function runPlugin(
  path: string,
  env: Readonly<Record<string, string>>,
  stdin: string,
  args: readonly string[] = [],
): Promise<PluginRun> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(path, args, {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (code) => {
      let json: Record<string, unknown> | undefined;
      try {
        json = stdout.trim() ? (JSON.parse(stdout) as Record<string, unknown>) : undefined;
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json, ms: performance.now() - started });
    });
    // A program may exit without reading its stdin (`node -e 0` does): its exit says how it went.
    child.stdin.once('error', () => undefined);
    child.stdin.end(stdin);
  });
}

/** The environment of a command for one pod's sandbox. */
export function cniEnv(
  command: string,
  pod: { namespace: string; name: string; containerId: string },
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    CNI_COMMAND: command,
    CNI_CONTAINERID: pod.containerId,
    CNI_NETNS: `/var/run/netns/${pod.name}`,
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${pod.namespace};K8S_POD_NAME=${pod.name};K8S_POD_INFRA_CONTAINER_ID=${pod.containerId}`,
    ...extra,
  };
}

/** A network configuration: the main plugin's, with its IPAM plugin's under `ipam`. */
export interface ChainedConfig {
  readonly cniVersion: string;
  readonly name: string;
  readonly type: string;
  readonly ipam: Readonly<Record<string, unknown>>;
  readonly [key: string]: unknown;
}

/** `ptp`'s configuration with berth-cni as its IPAM (`ipam` its settings), plus `extra`. */
export function chainedConfig(
  ipam: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): ChainedConfig {
  return {
    cniVersion: '1.0.0',
    name: 'berth',
    type: 'ptp',
    ipam: { type: 'berth-cni', ...ipam },
    ...extra,
  };
}

/** `chainedConfig` as the runtime passes it on stdin. */
export function networkConfig(
  ipam: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): string {
  return JSON.stringify(chainedConfig(ipam, extra));
}

/** The address a CNI result gives the pod, without its prefix length. */
export function addressOf(result: Record<string, unknown> | undefined): string | undefined {
  const ips = result?.ips as { address?: string }[] | undefined;
  return ips?.[0]?.address?.split('/')[0];
}
