/**
 * The manifests that put berth-cni on nodes: a ConfigMap with the bundled plugin and its
 * installer, and a DaemonSet on the matching nodes that copies them, with a Node.js runtime
 * from a public image, into `/opt/cni/bin` and writes the network configuration into
 * `/etc/cni/net.d`. No image of berth's own: the plugin travels in the ConfigMap (a few hundred
 * KB against the 1 MiB limit). Deleting the DaemonSet removes what it installed.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { type AutoModeCompute, avoidAutoModeNodes } from '../node-pool/auto-mode.js';
import { keepVpcCniOff, VPC_CNI_DAEMONSET } from '../node-pool/vpc-cni.js';
import { selectorLabels } from '../vocabulary/label-selector.js';
import { APP_COMPONENT_LABEL } from '../vocabulary/labels.js';
import { MANIFEST_LABELS } from './webhooks.js';

/** The public image whose `node` runs the plugin on the node (glibc, as EKS AMIs are). */
export const CNI_RUNTIME_IMAGE = 'public.ecr.aws/docker/library/node:24-bookworm-slim';
/** The network configuration file: sorted before aws-node's `10-aws.conflist`. */
export const CNI_CONFIG_FILE = '05-berth.conflist';
const NAME = 'berth-cni';
const NAMESPACE = 'kube-system';
/** The node's handout files (cni/handout/store.ts), the plugin's `ipam.dataDir` default. */
const HANDOUT_DIR = '/var/lib/berth-cni';
/** The node's lock, which the plugin and the agent share (cni/main.ts). */
const LOCK_FILE = '/run/berth-cni.lock';

/** How nodes reach berth's node IP API. */
export interface CniTarget {
  /** Base URL of the node IP API. */
  readonly endpoint: string;
  /** SigV4 with the node role (the stack's AWS_IAM URL), or plain (a local server). */
  readonly auth: 'sigv4' | 'none';
  /** Nodes that take their pod IPs from berth: `key=value[,key=value]`. */
  readonly nodeSelector: string;
  /**
   * The CA that signed the endpoint's certificate, for the plugin to trust besides the public
   * roots: the local server's own, over HTTPS. Absent: public roots only.
   */
  readonly caPem?: string;
}

/** The CA file the ConfigMap carries, installed beside the plugin (cni/build.ts reads it there). */
const CA_FILE = 'ca.crt';

/** The conflist for one node; the installer puts the node's name in place of `__NODE__`. */
export function cniNetworkConfig(target: CniTarget): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    name: 'berth',
    plugins: [
      {
        // ptp: one veth per pod, the pod's address /32 on the host side, no bridge to share.
        type: 'ptp',
        ipMasq: false,
        mtu: 9001,
        ipam: {
          type: NAME,
          endpoint: target.endpoint,
          node: '__NODE__',
          auth: target.auth,
        },
      },
      // Game servers publish host ports.
      { type: 'portmap', capabilities: { portMappings: true }, snat: false },
    ],
  };
}

/** The installer: what the init container runs, and what the main container undoes on exit. */
export function installScript(wrapper: string): string {
  return `#!/bin/sh
set -eu
bin=/host/opt/cni/bin
net=/host/etc/cni/net.d
mkdir -p "$bin/${NAME}.d.new" "$net"
cp /usr/local/bin/node "$bin/${NAME}.d.new/node"
cp /config/berth-cni*.mjs "$bin/${NAME}.d.new/"
if [ -f /config/${CA_FILE} ]; then cp /config/${CA_FILE} "$bin/${NAME}.d.new/${CA_FILE}"; fi
rm -rf "$bin/${NAME}.d" && mv "$bin/${NAME}.d.new" "$bin/${NAME}.d"
cat > "$bin/${NAME}.new" <<'WRAPPER'
${wrapper.trimEnd()}
WRAPPER
chmod 755 "$bin/${NAME}.new" && mv "$bin/${NAME}.new" "$bin/${NAME}"
sed "s/__NODE__/$NODE_NAME/" /config/${CNI_CONFIG_FILE} > "$net/.${CNI_CONFIG_FILE}.new"
mv "$net/.${CNI_CONFIG_FILE}.new" "$net/${CNI_CONFIG_FILE}"
echo "berth-cni installed for node $NODE_NAME"
`;
}

/** What the main container runs: wait, and remove the plugin when the DaemonSet goes. */
export const UNINSTALL_ON_EXIT = `trap 'rm -f /host/etc/cni/net.d/${CNI_CONFIG_FILE} /host/opt/cni/bin/${NAME}; rm -rf /host/opt/cni/bin/${NAME}.d; kill $! 2>/dev/null; exit 0' TERM INT
while true; do sleep 3600 & wait $!; done`;

/**
 * The ConfigMap and DaemonSet, for `bundle` (the plugin) and its `wrapper` script. The DaemonSet
 * never schedules on an EKS Auto Mode node (`autoMode`: the cluster's compute config, when berth's
 * config says Auto Mode is on): no other CNI may run there, and Auto Mode's own gives its pods IPs.
 */
export function cniManifests(
  target: CniTarget,
  plugin: { readonly bundle: Readonly<Record<string, string>>; readonly wrapper: string },
  autoMode?: AutoModeCompute,
): readonly KubernetesObject[] {
  const labels = { ...MANIFEST_LABELS, [APP_COMPONENT_LABEL]: NAME };
  const mounts = [
    { name: 'cni-bin', mountPath: '/host/opt/cni/bin' },
    { name: 'cni-net', mountPath: '/host/etc/cni/net.d' },
  ];
  const configMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: NAME, namespace: NAMESPACE, labels },
    data: {
      ...plugin.bundle,
      'install.sh': installScript(plugin.wrapper),
      [CNI_CONFIG_FILE]: `${JSON.stringify(cniNetworkConfig(target), null, 2)}\n`,
      ...(target.caPem ? { [CA_FILE]: target.caPem } : {}),
    },
  };
  const daemonSet = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: NAME, namespace: NAMESPACE, labels },
    spec: {
      selector: { matchLabels: { [APP_COMPONENT_LABEL]: NAME } },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%' } },
      template: {
        metadata: { labels },
        spec: {
          hostNetwork: true,
          priorityClassName: 'system-node-critical',
          nodeSelector: selectorLabels(target.nodeSelector),
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchExpressions: avoidAutoModeNodes(autoMode) }],
              },
            },
          },
          // Pod networking does not exist on the node until this has run.
          tolerations: [{ operator: 'Exists' }],
          terminationGracePeriodSeconds: 10,
          initContainers: [
            {
              name: 'install',
              image: CNI_RUNTIME_IMAGE,
              command: ['sh', '/config/install.sh'],
              env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
              volumeMounts: [...mounts, { name: 'config', mountPath: '/config', readOnly: true }],
              securityContext: { runAsUser: 0 },
            },
          ],
          containers: [
            {
              // The node agent: learns the node's address set, returns what berth wants back
              // and reports the node's use (cni/agent.ts); the same bundle as the plugin.
              name: 'agent',
              image: CNI_RUNTIME_IMAGE,
              command: ['node', '/config/berth-cni.mjs', 'agent'],
              volumeMounts: [
                ...mounts,
                { name: 'config', mountPath: '/config', readOnly: true },
                { name: 'handout', mountPath: HANDOUT_DIR },
                { name: 'lock', mountPath: LOCK_FILE },
              ],
              resources: { requests: { cpu: '5m', memory: '32Mi' }, limits: { memory: '96Mi' } },
              securityContext: { runAsUser: 0 },
            },
            {
              name: 'uninstall-on-exit',
              image: CNI_RUNTIME_IMAGE,
              command: ['sh', '-c', UNINSTALL_ON_EXIT],
              volumeMounts: mounts,
              resources: { requests: { cpu: '1m', memory: '8Mi' }, limits: { memory: '32Mi' } },
              securityContext: { runAsUser: 0 },
            },
          ],
          volumes: [
            { name: 'cni-bin', hostPath: { path: '/opt/cni/bin', type: 'DirectoryOrCreate' } },
            { name: 'cni-net', hostPath: { path: '/etc/cni/net.d', type: 'DirectoryOrCreate' } },
            { name: 'config', configMap: { name: NAME } },
            // Survives a reboot: the leases say which container holds which address.
            { name: 'handout', hostPath: { path: HANDOUT_DIR, type: 'DirectoryOrCreate' } },
            { name: 'lock', hostPath: { path: LOCK_FILE, type: 'FileOrCreate' } },
          ],
        },
      },
    },
  };
  return [configMap, daemonSet];
}

/**
 * What `manifests --cni` says beside the manifests (on stderr, so they still go straight to
 * `kubectl apply -f -`): berth keeps no pool where aws-node runs, and the command that patches
 * aws-node's DaemonSet off the nodes berth-cni serves (`keepVpcCniOff`).
 */
export function vpcCniPatchNote(target: CniTarget): string {
  const { namespace, name } = VPC_CNI_DAEMONSET;
  const patch = JSON.stringify(keepVpcCniOff(target.nodeSelector));
  return [
    `berth manifests --cni: berth keeps no ENI pool on a node where the VPC CNI's ${name} runs. Keep it off the nodes berth-cni serves (${target.nodeSelector}) with this strategic-merge patch of its DaemonSet, which keeps ${name}'s own node affinity:`,
    `kubectl -n ${namespace} patch daemonset ${name} --type strategic -p '${patch}'`,
    '',
  ].join('\n');
}
