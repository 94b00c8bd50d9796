/** EC2 instance ids from Kubernetes `spec.providerID` values. */

const AWS_PROVIDER_ID = /^aws:\/\/\/(?:[^/]*\/)?(i-[0-9a-f]{8,17})$/;

/** The instance id in `aws:///<zone>/<instance-id>`, or undefined for anything else. */
export function instanceIdOf(providerId: string | undefined): string | undefined {
  if (providerId === undefined) return undefined;
  return AWS_PROVIDER_ID.exec(providerId)?.[1];
}
