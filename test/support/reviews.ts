/** Builders of admission.k8s.io/v1 AdmissionReview bodies, as the kube-apiserver sends them. */
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
}

/** A whole AdmissionReview request body. */
export function review(input: ReviewInput) {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: randomUUID(),
      kind: { group: '', version: 'v1', kind: input.resource === 'services' ? 'Service' : 'Pod' },
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
