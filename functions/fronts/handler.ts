import { lambdaFrontsInvocation } from '../../shared/app/lambda-fronts.js';
import { observability, observedHandler } from '../../shared/app/observability.js';

const observe = observability('fronts');
export const handler = await observedHandler('fronts', observe, lambdaFrontsInvocation(observe));
