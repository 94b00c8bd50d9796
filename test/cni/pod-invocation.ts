import type { Invocation } from '../../cni/environment.js';

/** The invocation of `command` for the pod games/gs-1 in sandbox sb-1, for in-process runs. */
export const podInvocation = (command: Invocation['command']): Invocation => ({
  command,
  containerId: 'sb-1',
  netns: '/var/run/netns/gs-1',
  ifname: 'eth0',
  args: new Map([
    ['K8S_POD_NAMESPACE', 'games'],
    ['K8S_POD_NAME', 'gs-1'],
  ]),
});
