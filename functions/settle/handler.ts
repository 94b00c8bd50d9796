import { observability, observedHandler } from '../../shared/app/observability.js';
import { lambdaSettleMessages } from '../../shared/app/settle.js';

const observe = observability('settle');
export const handler = await observedHandler('settle', observe, lambdaSettleMessages(observe));
