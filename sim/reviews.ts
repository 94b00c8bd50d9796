/** admission.k8s.io/v1 AdmissionReview bodies, as the kube-apiserver sends them to a webhook. */
import { randomUUID } from 'node:crypto';

/** What a review is about. */
export interface ReviewInput {
  resource: string;
  subResource?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  namespace?: string;
  name?: string;
  object?: unknown;
  oldObject?: unknown;
  dryRun?: boolean;
  /** The request uid; a new one when absent (the apiserver sends a retried request under its old one). */
  uid?: string;
}

/** The kind of the object a review carries: a Binding for `pods/binding`. */
function kindOf(input: ReviewInput): string {
  if (input.subResource === 'binding') return 'Binding';
  return input.resource === 'services' ? 'Service' : 'Pod';
}

/** A whole AdmissionReview request body. */
export function review(input: ReviewInput) {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: input.uid ?? randomUUID(),
      kind: { group: '', version: 'v1', kind: kindOf(input) },
      resource: { group: '', version: 'v1', resource: input.resource },
      ...(input.subResource ? { subResource: input.subResource } : {}),
      name: input.name ?? '',
      namespace: input.namespace ?? 'default',
      operation: input.operation,
      userInfo: { username: 'kubernetes-admin' },
      object: input.object ?? null,
      oldObject: input.oldObject ?? null,
      dryRun: input.dryRun ?? false,
    },
  };
}
