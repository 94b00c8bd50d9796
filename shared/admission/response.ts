import type { JsonPatch } from '../vocabulary/patch.js';
/** Building AdmissionReview answers: always HTTP 200, a denial is `allowed: false` with a status. */

/** The `response` of an AdmissionReview. */
export interface AdmissionResponse {
  readonly uid: string;
  readonly allowed: boolean;
  readonly patchType?: 'JSONPatch';
  readonly patch?: string;
  readonly status?: { readonly code: number; readonly message: string };
  readonly warnings?: readonly string[];
}

/** The whole answer document. */
export interface AdmissionReviewResponse {
  readonly apiVersion: 'admission.k8s.io/v1';
  readonly kind: 'AdmissionReview';
  readonly response: AdmissionResponse;
}

/** What a handler decides, before it is tied to a request uid. */
export type AdmissionVerdict =
  | { readonly allowed: true; readonly patch?: JsonPatch; readonly warnings?: readonly string[] }
  | { readonly allowed: false; readonly code: number; readonly message: string };

/** Allows, with an optional patch and warnings. */
export function allow(patch?: JsonPatch, warnings?: readonly string[]): AdmissionVerdict {
  return {
    allowed: true,
    ...(patch && patch.length > 0 ? { patch } : {}),
    ...(warnings && warnings.length > 0 ? { warnings } : {}),
  };
}

/** Denies; the message starts with the offending field path. */
export function deny(code: number, message: string): AdmissionVerdict {
  return { allowed: false, code, message };
}

/** Wraps a verdict into the AdmissionReview answer for request `uid`. */
export function toReviewResponse(uid: string, verdict: AdmissionVerdict): AdmissionReviewResponse {
  const response: AdmissionResponse = verdict.allowed
    ? {
        uid,
        allowed: true,
        ...(verdict.patch
          ? {
              patchType: 'JSONPatch',
              patch: Buffer.from(JSON.stringify(verdict.patch)).toString('base64'),
            }
          : {}),
        ...(verdict.warnings ? { warnings: verdict.warnings } : {}),
      }
    : { uid, allowed: false, status: { code: verdict.code, message: verdict.message } };
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}
