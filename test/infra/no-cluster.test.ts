import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { berthStackFor } from '../support/synth.js';

describe('cdk synth without a cluster', () => {
  it('warns that the stack would serve an EKS cluster called "local", and says how to name one', () => {
    const { stack } = berthStackFor({});
    Annotations.fromStack(stack).hasWarning(
      '*',
      Match.stringLikeRegexp('no cluster named: .*pass -c cluster=NAME'),
    );
  });

  it('says nothing once -c cluster names one', () => {
    const { stack } = berthStackFor({}, { cluster: 'games' });
    const warnings = Annotations.fromStack(stack).findWarning(
      '*',
      Match.stringLikeRegexp('no cluster named'),
    );
    expect(warnings).toEqual([]);
  });
});
