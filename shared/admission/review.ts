/**
 * The `admission.k8s.io/v1` AdmissionReview as berth reads it: only the fields it dispatches on
 * are checked; objects stay opaque records for the handlers to parse.
 */
import { z } from 'zod';

const groupVersionResource = z.object({
  group: z.string(),
  version: z.string(),
  resource: z.string(),
});
const kubeObject = z.record(z.string(), z.unknown());

/**
 * The longest request uid taken: the apiserver sends a UUID (36 characters), and berth records
 * the uid of a CREATE with generateName, so it must stay far below a DynamoDB item.
 */
const MAX_UID_LENGTH = 128;

const admissionRequest = z.object({
  uid: z.string().min(1).max(MAX_UID_LENGTH),
  kind: z.object({ group: z.string(), version: z.string(), kind: z.string() }).optional(),
  resource: groupVersionResource,
  subResource: z.string().optional(),
  name: z.string().optional(),
  namespace: z.string().optional(),
  operation: z.enum(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']),
  userInfo: z.object({ username: z.string().optional() }).optional(),
  object: kubeObject.nullish(),
  oldObject: kubeObject.nullish(),
  dryRun: z.boolean().optional(),
});

const admissionReview = z.object({
  apiVersion: z.literal('admission.k8s.io/v1'),
  kind: z.literal('AdmissionReview'),
  request: admissionRequest,
});

/** One admission request: what is asked and of which object. */
export type AdmissionRequest = z.output<typeof admissionRequest>;

/** Why a body is not an AdmissionReview: one line per problem, path first. */
export class MalformedReviewError extends Error {
  readonly statusCode = 400;
  constructor(readonly problems: readonly string[]) {
    super(`not an admission.k8s.io/v1 AdmissionReview: ${problems.join('; ')}`);
    this.name = 'MalformedReviewError';
  }
}

/** Parses a request body; throws MalformedReviewError naming every bad field. */
export function parseAdmissionReview(body: unknown): AdmissionRequest {
  const result = admissionReview.safeParse(body);
  if (result.success) return result.data.request;
  throw new MalformedReviewError(
    result.error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`),
  );
}
