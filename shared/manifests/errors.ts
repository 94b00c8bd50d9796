/** A webhook endpoint the kube-apiserver would refuse or could not trust; the message names the fix. */
export class WebhookEndpointError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WebhookEndpointError';
  }
}
