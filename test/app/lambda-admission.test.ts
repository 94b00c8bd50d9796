/** The admission function's start: every served cluster must have its webhook secret. */
import { afterEach, describe, expect, it } from 'vitest';
import { lambdaAdmissionApi } from '../../shared/app/lambda-admission.js';
import { lambdaEnvironment } from '../support/lambda-environment.js';

let environment: { restore: () => void } | undefined;

afterEach(() => environment?.restore());

const observers = { onSettleLost: () => {}, onDecision: () => {}, onCluster: () => {} };

describe('lambdaAdmissionApi', () => {
  it('refuses to start a cluster named constructor that has no secret', async () => {
    // A cluster name is a DNS label, so `constructor` is one; the stack's map has no such key.
    environment = lambdaEnvironment('berth', ['games-a', 'constructor'], {
      BERTH_WEBHOOK_SECRETS: JSON.stringify({ 'games-a': 'arn:aws:secretsmanager:a' }),
    });
    await expect(lambdaAdmissionApi(observers)).rejects.toThrow(
      /BERTH_WEBHOOK_SECRETS: no secret for cluster constructor/,
    );
  });
});
