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

/** A main plugin's configuration with berth-cni as its IPAM, as the runtime passes it on. */
export function networkConfig(
  ipam: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'berth',
    type: 'ptp',
    ipam: { type: 'berth-cni', ...ipam },
    ...extra,
  });
}
