import { describe, expect, it } from 'vitest';
import { useAwsSettings } from '../../shared/config/load.js';

describe('useAwsSettings', () => {
  it('hands --region and --profile to every AWS client through the SDK default chains', () => {
    const env: NodeJS.ProcessEnv = { AWS_REGION: 'us-east-1' };
    useAwsSettings({ region: 'eu-west-1', profile: 'games-admin' }, env);
    expect(env).toEqual({ AWS_REGION: 'eu-west-1', AWS_PROFILE: 'games-admin' });
  });

  it('leaves the environment as it is without the flags', () => {
    const env: NodeJS.ProcessEnv = { AWS_REGION: 'us-east-1' };
    useAwsSettings({}, env);
    expect(env).toEqual({ AWS_REGION: 'us-east-1' });
  });
});
