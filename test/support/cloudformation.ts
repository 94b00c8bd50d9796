/** Reading synthesized CloudFormation in tests. */

/** A CloudFormation string built with Fn::Join, each Ref written as the logical id it names. */
export function renderedJoin(value: unknown): string {
  if (typeof value === 'string') return value;
  const object = value as { Ref?: string; 'Fn::Join'?: [string, unknown[]] };
  if (object.Ref !== undefined) return object.Ref;
  const join = object['Fn::Join'];
  if (join === undefined) throw new Error(`not a string or join: ${JSON.stringify(value)}`);
  return join[1].map(renderedJoin).join(join[0]);
}
