/**
 * A ValidatingAdmissionPolicy that keeps anyone but berth from writing berth's marks on a pod.
 * berth checks identity against its own records at every step (shared/admission/pod-identity.ts),
 * so a forged annotation never makes two pods hold one value; this policy keeps a user from
 * forging one in the first place: a pod UPDATE may not add, change or remove the annotations and
 * labels berth writes, and a pod may not be created carrying berth's allocation id without asking
 * berth for ports (which berth's CREATE then replaces with an id of its own). Kubernetes evaluates
 * the policy's CEL in the apiserver, with no webhook call (admissionregistration.k8s.io/v1, GA
 * since 1.30: https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/).
 * Validating admission runs after every mutating webhook, so berth's own CREATE patch passes, and
 * a Binding's annotations reach the pod through the binding subresource, which it does not match.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  ADDRESS_ANNOTATION,
  ALLOCATION_ID_ANNOTATION,
  FRONTS_ANNOTATION,
  GAME_SERVER_LABEL,
  HOST_PORTS_ANNOTATION,
  NODE_ANNOTATION,
  PORTS_ANNOTATION,
} from '../vocabulary/labels.js';
import { EXCLUDED_NAMESPACES, MANIFEST_LABELS } from './webhooks.js';

/** The annotations berth writes on a pod, which no one else may change. */
export const GUARDED_ANNOTATIONS = [
  ALLOCATION_ID_ANNOTATION,
  PORTS_ANNOTATION,
  HOST_PORTS_ANNOTATION,
  FRONTS_ANNOTATION,
  NODE_ANNOTATION,
  ADDRESS_ANNOTATION,
] as const;

/** The labels berth writes on a pod. */
export const GUARDED_LABELS = [GAME_SERVER_LABEL] as const;

export const GUARD_POLICY_NAME = 'pod-marks.berth.dev';

/** CEL: every key of `keys` in `field` is as it was: present in both with one value, or in neither. */
function unchanged(field: 'annotations' | 'labels', keys: readonly string[]): string {
  const has = (object: string) => `has(${object}.metadata.${field})`;
  const holds = (object: string) => `(${has(object)} && k in ${object}.metadata.${field})`;
  return `${JSON.stringify(keys)}.all(k, ${holds('object')} == ${holds('oldObject')} && (!${holds('object')} || object.metadata.${field}[k] == oldObject.metadata.${field}[k]))`;
}

/** The policy's validations, each with the message a refused request is told. */
export const GUARD_VALIDATIONS = [
  {
    expression: `request.operation != 'UPDATE' || ${unchanged('annotations', GUARDED_ANNOTATIONS)}`,
    message: `metadata.annotations: ${GUARDED_ANNOTATIONS.join(', ')} are written by berth only; to change a game server's ports, delete the pod and create it again`,
    reason: 'Forbidden',
  },
  {
    expression: `request.operation != 'UPDATE' || ${unchanged('labels', GUARDED_LABELS)}`,
    message: `metadata.labels: ${GUARDED_LABELS.join(', ')} is written by berth only`,
    reason: 'Forbidden',
  },
  {
    expression: `request.operation != 'CREATE' || !has(object.metadata.annotations) || !('${ALLOCATION_ID_ANNOTATION}' in object.metadata.annotations) || '${PORTS_ANNOTATION}' in object.metadata.annotations`,
    message: `metadata.annotations[${ALLOCATION_ID_ANNOTATION}]: a pod carries berth's allocation id only when it asks berth for ports (${PORTS_ANNOTATION}); remove it from the manifest`,
    reason: 'Forbidden',
  },
] as const;

/** The policy and its binding, for `berth manifests`. */
export function annotationGuard(): readonly KubernetesObject[] {
  const metadata = { name: GUARD_POLICY_NAME, labels: { ...MANIFEST_LABELS } };
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata,
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: [''],
            apiVersions: ['v1'],
            operations: ['CREATE', 'UPDATE'],
            resources: ['pods'],
          },
        ],
      },
      validations: GUARD_VALIDATIONS.map((validation) => ({ ...validation })),
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata,
    spec: {
      policyName: GUARD_POLICY_NAME,
      validationActions: ['Deny'],
      // The namespaces berth's webhooks leave alone are left alone here too.
      matchResources: {
        namespaceSelector: {
          matchExpressions: [
            {
              key: 'kubernetes.io/metadata.name',
              operator: 'NotIn',
              values: [...EXCLUDED_NAMESPACES],
            },
          ],
        },
      },
    },
  };
  return [policy, binding];
}
