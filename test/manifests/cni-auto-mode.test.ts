import { describe, expect, it } from 'vitest';
import { createManifestsCommand } from '../../cli/manifests.js';
import { parseConfig } from '../../shared/config/schema.js';
import { cniManifests } from '../../shared/manifests/cni.js';
import { berthManifests } from '../../shared/manifests/manifests.js';

const PLUGIN = { bundle: { 'berth-cni.mjs': '// plugin' }, wrapper: '#!/bin/sh' };
const TARGET = {
  endpoint: 'http://10.0.0.1:8080',
  auth: 'none',
  nodeSelector: 'role=game-server',
} as const;

// biome-ignore lint/suspicious/noExplicitAny: the DaemonSet, read as plain JSON
const podSpecOf = (objects: readonly any[]) =>
  objects.find((o) => o.kind === 'DaemonSet')?.spec.template.spec;

describe('berth manifests --cni on a cluster with EKS Auto Mode nodes', () => {
  it('keeps the DaemonSet off nodes labelled as Auto Mode labels its own', () => {
    const pod = podSpecOf(cniManifests(TARGET, PLUGIN));
    expect(pod.nodeSelector).toEqual({ role: 'game-server' });
    expect(pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution).toEqual({
      nodeSelectorTerms: [
        {
          matchExpressions: [
            { key: 'eks.amazonaws.com/compute-type', operator: 'NotIn', values: ['auto'] },
            { key: 'eks.amazonaws.com/nodeclass', operator: 'DoesNotExist' },
          ],
        },
      ],
    });
  });

  it("also keeps it off the built-in NodePools' nodes when the config says the cluster runs Auto Mode", async () => {
    const out: string[] = [];
    const code = await createManifestsCommand({
      stdout: (text) => out.push(text),
      stderr: () => {},
      secrets: { secretString: async () => '' },
      localCa: async () => '',
    })({
      config: parseConfig({
        cluster: 'games',
        scale: {
          nodeSelector: 'karpenter.sh/nodepool=general-purpose',
          nodePool: { type: 'auto-mode' },
        },
      }),
      dataDir: '.berth-test',
      port: 8443,
      http: false,
      json: true,
      cni: true,
      url: 'http://10.0.0.1:8080',
    });
    expect(code).toBe(0);
    const pod = podSpecOf(JSON.parse(out.join('')).items);
    const [term] =
      pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
    expect(term.matchExpressions).toContainEqual({
      key: 'karpenter.sh/nodepool',
      operator: 'NotIn',
      values: ['general-purpose', 'system'],
    });
  });

  it('prints the buffer placeholders with node pool auto-mode, as with karpenter', () => {
    const scale = parseConfig({
      scale: {
        nodeSelector: 'karpenter.sh/nodepool=general-purpose',
        nodePool: { type: 'auto-mode' },
      },
    }).scale;
    const kinds = (objects: readonly { kind?: string }[]) => objects.map((o) => o.kind);
    const endpoint = { url: 'https://berth.example/admission' };
    expect(kinds(berthManifests(endpoint, 'games', scale))).toContain('PriorityClass');
    const deployment = berthManifests(endpoint, 'games', scale).find(
      (o) => o.kind === 'Deployment',
    ) as { spec: { template: { spec: { nodeSelector: Record<string, string> } } } } | undefined;
    expect(deployment?.spec.template.spec.nodeSelector).toEqual({
      'karpenter.sh/nodepool': 'general-purpose',
    });
    expect(kinds(berthManifests(endpoint, 'games', parseConfig({}).scale))).not.toContain(
      'Deployment',
    );
  });
});
