/** A Service field berth cannot accept, in the apiserver's `field: Invalid value: v: detail` form. */
export class ServiceFieldError extends Error {
  readonly statusCode = 422;
  readonly field: string;

  constructor(field: string, value: unknown, detail: string) {
    super(`${field}: Invalid value: ${JSON.stringify(value)}: ${detail}`);
    this.name = 'ServiceFieldError';
    this.field = field;
  }
}
