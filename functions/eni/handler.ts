import { lambdaEniInvocation } from '../../shared/app/eni-pass.js';
import { observability, observedHandler } from '../../shared/app/observability.js';

const observe = observability('eni');
export const handler = await observedHandler('eni', observe, lambdaEniInvocation(observe));
