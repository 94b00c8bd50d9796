/** The simulator's AdmissionReview builder, which tests use to send reviews. */
export { type ReviewInput, review } from '../../sim/reviews.js';
