/** Service reviews sent straight to a runtime's admission, as the apiserver would send them. */
import type { V1Service } from '@kubernetes/client-node';
import { admit } from '../../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import type { createRuntime } from '../../shared/app/runtime.js';
import { review } from '../../sim/reviews.js';

/** Sends a CREATE of `object`, or a DELETE of `old`; answers the review's response. */
export function serviceReviews(admission: ReturnType<typeof createRuntime>['admission']) {
  return async (operation: 'CREATE' | 'DELETE', object: V1Service | undefined, old?: V1Service) => {
    const body = review({
      resource: 'services',
      operation,
      name: (object ?? old)?.metadata?.name ?? '',
      object,
      oldObject: old,
    });
    return (await admit(parseAdmissionReview(body), admission)).response;
  };
}
