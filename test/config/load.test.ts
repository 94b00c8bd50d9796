import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../shared/config/errors.js';
import { lambdaSettings, useAwsSettings } from '../../shared/config/load.js';

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

describe('lambdaSettings', () => {
  const ENV = { BERTH_TABLE: 'berth', AWS_REGION: 'eu-west-1' };

  it("reads every cluster of the stack's config, and each one's webhook secret", () => {
    const settings = lambdaSettings({
      ...ENV,
      BERTH_CONFIG: JSON.stringify({
        scale: { maxNodes: 20 },
        clusters: { 'games-a': {}, 'games-b': { scale: { maxNodes: 40 } } },
      }),
      BERTH_WEBHOOK_SECRETS: JSON.stringify({ 'games-a': 'arn:a', 'games-b': 'arn:b' }),
    });
    expect(settings.configs.map((config) => [config.cluster, config.scale.maxNodes])).toEqual([
      ['games-a', 20],
      ['games-b', 40],
    ]);
    expect(settings.webhookSecretArns).toEqual({ 'games-a': 'arn:a', 'games-b': 'arn:b' });
  });

  it('reads a single cluster config as before, with no secrets outside the admission function', () => {
    const settings = lambdaSettings({ ...ENV, BERTH_CONFIG: '{"cluster":"games"}' });
    expect(settings.configs.map((config) => config.cluster)).toEqual(['games']);
    expect(settings.webhookSecretArns).toEqual({});
  });

  it('reports every bad variable together', () => {
    const read = () =>
      lambdaSettings({
        AWS_REGION: 'eu-west-1',
        BERTH_CONFIG: JSON.stringify({ clusters: { 'games-a': { scale: { maxNodes: -1 } } } }),
        BERTH_WEBHOOK_SECRETS: '["arn:a"]',
      });
    expect(read).toThrow(ConfigError);
    expect(read).toThrow(
      /BERTH_TABLE[\s\S]*clusters\.games-a: scale\.maxNodes[\s\S]*BERTH_WEBHOOK_SECRETS/,
    );
  });
});
