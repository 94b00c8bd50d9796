import type {
  V1Deployment,
  V1MutatingWebhook,
  V1MutatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/schema.js';
import { WebhookEndpointError } from '../../shared/manifests/errors.js';
import { berthManifests } from '../../shared/manifests/manifests.js';
import {
  BERTH_GROUP,
  berthClusterRole,
  berthClusterRoleBinding,
} from '../../shared/manifests/rbac.js';
import {
  localWebhookUrl,
  mutatingWebhookConfiguration,
  securedWebhookUrl,
  WEBHOOK_TIMEOUT_SECONDS,
  webhookUrl,
} from '../../shared/manifests/webhooks.js';
import { type AdmissionCall, reachesBerth } from '../../sim/webhook-match.js';

const CA_PEM = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n';
const SECRET = 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0';

function webhooks(
  endpoint = { url: 'https://127.0.0.1:8443/admission', caPem: CA_PEM },
): V1MutatingWebhook[] {
  return mutatingWebhookConfiguration(endpoint, 'games').webhooks ?? [];
}

function webhookFor(resource: string, operation: string): V1MutatingWebhook {
  const matching = webhooks().filter((webhook) =>
    webhook.rules?.some(
      (rule) => rule.resources?.includes(resource) && rule.operations?.includes(operation),
    ),
  );
  expect(matching).toHaveLength(1);
  const [webhook] = matching;
  if (!webhook) throw new Error('unreachable');
  return webhook;
}

describe('mutatingWebhookConfiguration', () => {
  it('routes every resource and operation of the dispatch table to exactly one webhook', () => {
    const routed = webhooks().flatMap((webhook) =>
      (webhook.rules ?? []).flatMap((rule) =>
        (rule.resources ?? []).flatMap((resource) =>
          (rule.operations ?? []).map((op) => `${resource} ${op}`),
        ),
      ),
    );
    expect(routed.sort()).toEqual(
      [
        'pods CREATE',
        'pods DELETE',
        'pods/binding CREATE',
        'services CREATE',
        'services UPDATE',
        'services DELETE',
      ].sort(),
    );
  });

  it('declares dry-run-aware side effects, v1 reviews and a timeout under the 10 s default on every webhook', () => {
    for (const webhook of webhooks()) {
      expect(webhook.sideEffects).toBe('NoneOnDryRun');
      expect(webhook.admissionReviewVersions).toEqual(['v1']);
      expect(webhook.timeoutSeconds).toBe(WEBHOOK_TIMEOUT_SECONDS);
      expect(webhook.timeoutSeconds).toBeLessThan(10);
      expect(
        webhook.rules?.every(
          (rule) => rule.apiGroups?.[0] === '' && rule.apiVersions?.[0] === 'v1',
        ),
      ).toBe(true);
    }
  });

  it('names every webhook uniquely with a fully qualified name', () => {
    const names = webhooks().map((webhook) => webhook.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^[a-z0-9-]+\.[a-z0-9-]+\.[a-z0-9-]+$/);
  });

  it('keeps kube-system, and namespaces labelled berth.dev/bypass=true, out of every webhook', () => {
    for (const webhook of webhooks()) {
      expect(webhook.namespaceSelector).toEqual({
        matchExpressions: [
          { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system'] },
          { key: 'berth.dev/bypass', operator: 'NotIn', values: ['true'] },
        ],
      });
    }
  });

  it('fails pod CREATE closed, only for pods with the berth.dev/ports annotation, and re-invokes it', () => {
    const create = webhookFor('pods', 'CREATE');
    expect(create.failurePolicy).toBe('Fail');
    expect(create.reinvocationPolicy).toBe('IfNeeded');
    expect(create.objectSelector).toBeUndefined();
    expect(create.matchConditions).toEqual([
      {
        name: 'requests-berth-ports',
        expression:
          "has(object.metadata.annotations) && 'berth.dev/ports' in object.metadata.annotations",
      },
    ]);
  });

  it('ignores failures on pod DELETE and sees only pods labelled as game servers', () => {
    const del = webhookFor('pods', 'DELETE');
    expect(del.failurePolicy).toBe('Ignore');
    expect(del.objectSelector).toEqual({ matchLabels: { 'berth.dev/game-server': 'true' } });
    expect(del.rules?.[0]?.operations).toEqual(['DELETE']);
  });

  describe('which requests reach berth (selectors and CEL conditions evaluated)', () => {
    const gameServer = {
      metadata: {
        name: 'match-1',
        labels: { 'berth.dev/game-server': 'true' },
        annotations: { 'berth.dev/ports': '[]', 'berth.dev/allocation-id': 'a' },
      },
    };
    const call = (over: Partial<AdmissionCall>): AdmissionCall => ({
      resource: 'pods',
      operation: 'CREATE',
      namespace: 'games',
      ...over,
    });
    const service = (spec: Record<string, unknown>) => ({ metadata: { name: 's' }, spec });

    it('calls berth for a pod CREATE with berth.dev/ports and for no other pod CREATE', () => {
      expect(reachesBerth(webhooks(), call({ object: gameServer }))).toBe(true);
      expect(reachesBerth(webhooks(), call({ object: { metadata: { name: 'web' } } }))).toBe(false);
      expect(
        reachesBerth(webhooks(), call({ object: { metadata: { annotations: { a: 'b' } } } })),
      ).toBe(false);
    });

    it('calls berth for the DELETE of a game server, not for the final DELETE of one already terminating', () => {
      const del = (oldObject: unknown) => call({ operation: 'DELETE', oldObject });
      expect(reachesBerth(webhooks(), del(gameServer))).toBe(true);
      const terminating = {
        metadata: { ...gameServer.metadata, deletionTimestamp: '2026-06-01T00:00:30Z' },
      };
      expect(reachesBerth(webhooks(), del(terminating))).toBe(false);
      expect(reachesBerth(webhooks(), del({ metadata: { name: 'web', labels: {} } }))).toBe(false);
    });

    it('calls berth for Services that hold or held values, not for ExternalName or headless ones', () => {
      const svc = (operation: AdmissionCall['operation'], object?: unknown, oldObject?: unknown) =>
        reachesBerth(
          webhooks(),
          call({
            resource: 'services',
            operation,
            ...(object ? { object } : {}),
            ...(oldObject ? { oldObject } : {}),
          }),
        );
      const clusterIp = service({ type: 'ClusterIP' });
      const nodePort = service({ type: 'NodePort', clusterIP: '10.100.0.9' });
      const external = service({ type: 'ExternalName', externalName: 'db.example.com' });
      const headless = service({ type: 'ClusterIP', clusterIP: 'None' });
      expect(svc('CREATE', clusterIp)).toBe(true);
      expect(svc('CREATE', service({}))).toBe(true);
      expect(svc('CREATE', external)).toBe(false);
      expect(svc('CREATE', headless)).toBe(false);
      expect(svc('UPDATE', external, external)).toBe(false);
      expect(svc('UPDATE', headless, headless)).toBe(false);
      // Values given back, or newly wanted: berth must see the change.
      expect(svc('UPDATE', external, nodePort)).toBe(true);
      expect(svc('UPDATE', nodePort, external)).toBe(true);
      expect(svc('DELETE', undefined, nodePort)).toBe(true);
      expect(svc('DELETE', undefined, external)).toBe(false);
      expect(svc('DELETE', undefined, headless)).toBe(false);
    });

    it('calls berth for every binding, and for nothing in kube-system', () => {
      const binding = { metadata: { name: 'match-1' }, target: { kind: 'Node', name: 'n' } };
      expect(reachesBerth(webhooks(), call({ subResource: 'binding', object: binding }))).toBe(
        true,
      );
      expect(reachesBerth(webhooks(), call({ namespace: 'kube-system', object: gameServer }))).toBe(
        false,
      );
    });
  });

  it('ignores failures on bindings and sees all of them', () => {
    const binding = webhookFor('pods/binding', 'CREATE');
    expect(binding.failurePolicy).toBe('Ignore');
    expect(binding.objectSelector).toBeUndefined();
    expect(binding.matchConditions).toBeUndefined();
  });

  it('fails Service CREATE and UPDATE closed with re-invocation, and ignores failures on DELETE', () => {
    const write = webhookFor('services', 'CREATE');
    expect(webhookFor('services', 'UPDATE').name).toBe(write.name);
    expect(write.failurePolicy).toBe('Fail');
    expect(write.reinvocationPolicy).toBe('IfNeeded');
    expect(webhookFor('services', 'DELETE').failurePolicy).toBe('Ignore');
  });

  it('puts the CA as base64 PEM into every client config', () => {
    for (const webhook of webhooks()) {
      expect(webhook.clientConfig.url).toBe('https://127.0.0.1:8443/admission');
      expect(Buffer.from(webhook.clientConfig.caBundle ?? '', 'base64').toString('utf8')).toBe(
        CA_PEM,
      );
    }
  });

  it('leaves caBundle out when the endpoint has a public certificate', () => {
    const url = securedWebhookUrl('https://abc.lambda-url.eu-west-1.on.aws/admission/', SECRET);
    for (const webhook of webhooks({ url, caPem: '' })) {
      expect(webhook.clientConfig).toEqual({ url });
    }
  });

  it('records the cluster on the configuration', () => {
    const configuration: V1MutatingWebhookConfiguration = mutatingWebhookConfiguration(
      { url: 'https://h/admission' },
      'games',
    );
    expect(configuration.metadata?.name).toBe('berth');
    expect(configuration.metadata?.annotations).toEqual({ 'berth.dev/cluster': 'games' });
  });
});

describe('webhookUrl', () => {
  it('accepts an HTTPS URL with a path', () => {
    expect(webhookUrl('https://example.com/admission/abc')).toBe(
      'https://example.com/admission/abc',
    );
  });

  it.each([
    ['http://example.com/admission', /must use https/],
    ['https://example.com/admission?x=1', /query or fragment/],
    ['https://example.com/admission?', /query or fragment/],
    ['https://example.com/admission#top', /query or fragment/],
    ['https://user:pw@example.com/admission', /user:password/],
    ['example.com/admission', /not a URL/],
  ])('rejects %s', (text, message) => {
    expect(() => webhookUrl(text)).toThrow(WebhookEndpointError);
    expect(() => webhookUrl(text)).toThrow(message);
  });
});

describe('securedWebhookUrl', () => {
  it('appends the secret to the base URL, with or without its trailing slash', () => {
    const expected = `https://abc.lambda-url.eu-west-1.on.aws/admission/${SECRET}`;
    expect(securedWebhookUrl('https://abc.lambda-url.eu-west-1.on.aws/admission/', SECRET)).toBe(
      expected,
    );
    expect(securedWebhookUrl('https://abc.lambda-url.eu-west-1.on.aws/admission', SECRET)).toBe(
      expected,
    );
  });

  it('rejects a secret that is short or has characters a path would mangle', () => {
    expect(() => securedWebhookUrl('https://h/admission/', 'short')).toThrow(WebhookEndpointError);
    expect(() => securedWebhookUrl('https://h/admission/', `${SECRET}/x?y`)).toThrow(
      WebhookEndpointError,
    );
  });
});

describe('localWebhookUrl', () => {
  it('points at the loopback server on the given port', () => {
    expect(localWebhookUrl(9443)).toBe('https://127.0.0.1:9443/admission');
  });
});

describe('berth RBAC', () => {
  it('grants the berth group exactly the Kubernetes calls berth makes', () => {
    expect(berthClusterRole().rules).toEqual([
      { apiGroups: [''], resources: ['services'], verbs: ['get', 'list'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'patch'] },
      { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'patch', 'delete'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'get', 'patch'] },
      { apiGroups: ['agones.dev'], resources: ['gameservers'], verbs: ['list', 'patch', 'delete'] },
      { apiGroups: ['karpenter.sh'], resources: ['nodepools'], verbs: ['get'] },
      {
        apiGroups: ['networking.k8s.io'],
        resources: ['servicecidrs', 'ipaddresses'],
        verbs: ['get', 'list', 'watch'],
      },
      {
        apiGroups: ['apps'],
        resources: ['deployments/scale'],
        resourceNames: ['berth-buffer'],
        verbs: ['patch'],
      },
    ]);
  });

  it('binds the ClusterRole to the group of the access entries', () => {
    const binding = berthClusterRoleBinding();
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: berthClusterRole().metadata?.name,
    });
    expect(binding.subjects).toEqual([
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: BERTH_GROUP },
    ]);
    expect(BERTH_GROUP).toBe('berth');
  });
});

describe('berthManifests', () => {
  const scale = (nodePool: Record<string, string>) => parseConfig({ scale: { nodePool } }).scale;

  it('creates the RBAC before the webhook configuration, and the pod guard after it', () => {
    const kinds = berthManifests(
      { url: 'https://h/admission' },
      'games',
      scale({ type: 'asg', name: 'g' }),
    ).map((object) => object.kind);
    expect(kinds).toEqual([
      'ClusterRole',
      'ClusterRoleBinding',
      'MutatingWebhookConfiguration',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
  });

  it('with node pool karpenter, adds the buffer placeholders: low priority, never preempting, one slot each', () => {
    const objects = berthManifests(
      { url: 'https://h/admission' },
      'games',
      parseConfig({
        scale: {
          nodePool: { type: 'karpenter', name: 'games' },
          gameServerCpuMillis: 500,
          nodeSelector: 'role=game-server,pool=games',
        },
      }).scale,
    );
    expect(objects.map((object) => object.kind)).toEqual([
      'ClusterRole',
      'ClusterRoleBinding',
      'Namespace',
      'PriorityClass',
      'Deployment',
      'MutatingWebhookConfiguration',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
    const [, priority, deployment] = objects.slice(2) as [unknown, unknown, V1Deployment];
    expect(priority).toMatchObject({ value: -10, preemptionPolicy: 'Never' });
    expect(deployment.spec?.replicas).toBe(0);
    expect(deployment.spec?.template.spec).toMatchObject({
      priorityClassName: 'berth-buffer',
      nodeSelector: { role: 'game-server', pool: 'games' },
      containers: [{ resources: { requests: { cpu: '500m' } } }],
    });
  });
});
