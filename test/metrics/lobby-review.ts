/** The AdmissionReview body both metrics tests admit: a CREATE of a NodePort Service `games/lobby`. */
import { review } from '../../sim/reviews.js';

/** The review as the apiserver POSTs it: a cluster IP and one node port to allocate. */
export const LOBBY_REVIEW = JSON.stringify(
  review({
    resource: 'services',
    operation: 'CREATE',
    namespace: 'games',
    name: 'lobby',
    object: {
      kind: 'Service',
      metadata: { name: 'lobby', namespace: 'games' },
      spec: { type: 'NodePort', ports: [{ port: 80, protocol: 'TCP' }] },
    },
  }),
);
