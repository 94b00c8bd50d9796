/**
 * The node's instance role credentials and region from the instance metadata service, IMDSv2
 * only (a session token first), as every AWS SDK reads them on EC2.
 */

/** Temporary credentials of the instance role. */
export interface Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
}

const IMDS = 'http://169.254.169.254';

/** Reads the instance role's credentials and the region, within `signal`. */
export async function instanceIdentity(
  signal: AbortSignal,
  base = IMDS,
): Promise<{ readonly credentials: Credentials; readonly region: string }> {
  const tokenResponse = await fetch(`${base}/latest/api/token`, {
    method: 'PUT',
    headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' },
    signal,
  });
  const token = await expectOk(tokenResponse, 'IMDSv2 token');
  const get = async (path: string, what: string) =>
    expectOk(
      await fetch(`${base}${path}`, { headers: { 'x-aws-ec2-metadata-token': token }, signal }),
      what,
    );
  const roleList = await get('/latest/meta-data/iam/security-credentials/', 'instance role');
  const role = roleList.split('\n')[0]?.trim();
  if (!role) throw new Error('the instance has no IAM role: attach the node role to the instance');
  const body = JSON.parse(
    await get(`/latest/meta-data/iam/security-credentials/${role}`, 'role credentials'),
  ) as { AccessKeyId?: string; SecretAccessKey?: string; Token?: string };
  const region = await get('/latest/meta-data/placement/region', 'region');
  return {
    credentials: {
      accessKeyId: body.AccessKeyId ?? '',
      secretAccessKey: body.SecretAccessKey ?? '',
      sessionToken: body.Token ?? '',
    },
    region: region.trim(),
  };
}

async function expectOk(response: Response, what: string): Promise<string> {
  const text = await response.text();
  if (!response.ok) throw new Error(`instance metadata: ${what}: HTTP ${response.status}`);
  return text;
}
