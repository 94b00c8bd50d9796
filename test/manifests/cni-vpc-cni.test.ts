/**
 * `berth manifests --cni` beside the VPC CNI: the patch it prints for aws-node's DaemonSet keeps
 * aws-node off every node berth-cni's DaemonSet runs on, and on every other node aws-node's own
 * manifest would run on.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createManifestsCommand } from '../../cli/manifests.js';
import { parseConfig } from '../../shared/config/schema.js';
import { VPC_CNI_NODE_AFFINITY } from '../../shared/node-pool/vpc-cni.js';
import { selectorMatches } from '../../sim/fakes/admission-chain.js';

type Labels = Readonly<Record<string, string>>;

/**
 * Terms are ORed, a term's expressions ANDed, each as a label selector's (`NotIn` matches a node
 * without the key).
 */
// biome-ignore lint/suspicious/noExplicitAny: terms read back as plain JSON
const matchesTerms = (terms: readonly any[], labels: Labels) =>
  terms.some((term) => selectorMatches(term, labels));

/** Whether a DaemonSet's pod spec schedules on a node with `labels`. */
// biome-ignore lint/suspicious/noExplicitAny: a pod spec read back as plain JSON
function schedules(spec: any, labels: Labels): boolean {
  const selector: Labels = spec.nodeSelector ?? {};
  const terms =
    spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
      ?.nodeSelectorTerms ?? [];
  return (
    Object.entries(selector).every(([key, value]) => labels[key] === value) &&
    (terms.length === 0 || matchesTerms(terms, labels))
  );
}

/** aws-node's pod spec as its manifest has it, with the printed strategic-merge patch applied. */
// biome-ignore lint/suspicious/noExplicitAny: the patch read back as plain JSON
function patchedVpcCni(patch: any) {
  // `nodeSelectorTerms` is an atomic list: the patch's replaces the manifest's whole.
  const own = { nodeSelectorTerms: [{ matchExpressions: VPC_CNI_NODE_AFFINITY }] };
  return {
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          ...own,
          ...patch.spec.template.spec.affinity.nodeAffinity
            .requiredDuringSchedulingIgnoredDuringExecution,
        },
      },
    },
  };
}

async function printed(nodeSelector: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await createManifestsCommand({
    stdout: (text) => out.push(text),
    stderr: (text) => err.push(text),
    secrets: { secretString: async () => '' },
    localCa: async () => '',
  })({
    config: parseConfig({ cluster: 'games', scale: { nodeSelector } }),
    dataDir: '.berth-test',
    port: 8443,
    http: false,
    json: true,
    cni: true,
    url: 'http://10.0.0.1:8080',
  });
  const note = err.join('');
  const command =
    /^kubectl -n kube-system patch daemonset aws-node --type strategic -p '(.*)'$/m.exec(note);
  return {
    code,
    note,
    berthCni: JSON.parse(out.join('')).items.find((o: { kind: string }) => o.kind === 'DaemonSet')
      .spec.template.spec,
    patch: command ? JSON.parse(command[1] ?? '') : undefined,
  };
}

const LINUX = { 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'arm64' };

describe('berth manifests --cni beside the VPC CNI', () => {
  it("prints aws-node's patch on stderr, keeping the manifests on stdout for kubectl apply", async () => {
    const { code, note, patch } = await printed('role=game-server');
    expect(code).toBe(0);
    expect(note).toMatch(
      /^berth manifests --cni: berth keeps no ENI pool on a node where the VPC CNI's aws-node runs\. Keep it off the nodes berth-cni serves \(role=game-server\)/,
    );
    expect(patch.spec.template.spec.affinity.nodeAffinity).toEqual({
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          {
            matchExpressions: [
              ...VPC_CNI_NODE_AFFINITY,
              { key: 'role', operator: 'NotIn', values: ['game-server'] },
            ],
          },
        ],
      },
    });
    const awsNode = patchedVpcCni(patch);
    expect(schedules(awsNode, { ...LINUX, role: 'game-server' })).toBe(false);
    expect(schedules(awsNode, { ...LINUX, role: 'system' })).toBe(true);
    expect(schedules(awsNode, LINUX)).toBe(true);
    // aws-node's own requirements stand: still never on Fargate.
    expect(schedules(awsNode, { ...LINUX, 'eks.amazonaws.com/compute-type': 'fargate' })).toBe(
      false,
    );
  });

  it('leaves no node both run on, and no Linux node aws-node serves without one of them', async () => {
    const { berthCni, patch } = await printed('role=game-server,tier=ranked');
    const awsNode = patchedVpcCni(patch);
    fc.assert(
      fc.property(
        fc.record(
          {
            role: fc.constantFrom('game-server', 'system'),
            tier: fc.constantFrom('ranked', 'casual'),
          },
          { requiredKeys: [] },
        ),
        (labels) => {
          const node = { ...LINUX, ...labels };
          const both = schedules(berthCni, node) && schedules(awsNode, node);
          const either = schedules(berthCni, node) || schedules(awsNode, node);
          expect({ node, both, either }).toEqual({ node, both: false, either: true });
        },
      ),
    );
  });
});
