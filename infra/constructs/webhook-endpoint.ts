/**
 * The admission webhook's public HTTPS endpoint: a Lambda function URL whose path carries a
 * secret segment (`/admission/<secret>`; `/clusters/<name>/admission/<secret>` in a stack of
 * several clusters, each with its own secret).
 *
 * Why a secret in the path: the kube-apiserver cannot SigV4-sign (so AuthType AWS_IAM is out),
 * and EKS does not expose `--admission-control-config-file`, so a webhook can be given neither
 * client certificates nor tokens. The only credential the apiserver can present is the URL
 * itself, which lives in the MutatingWebhookConfiguration (readable by cluster admins only).
 * The function compares the segment in constant time and answers anything else with 404.
 */
import { CfnOutput, Fn, Validations } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { STACK_OUTPUTS } from '../../shared/manifests/stack-outputs.js';

/** Props of the webhook endpoint. */
export interface WebhookEndpointProps {
  readonly cluster: string;
}

/** The secret behind the webhook path; made before the function, which reads it at init. */
export class WebhookSecret extends Construct {
  /** The generated path segment. */
  readonly secret: secretsmanager.Secret;

  constructor(scope: Construct, id: string, props: WebhookEndpointProps) {
    super(scope, id);
    this.secret = new secretsmanager.Secret(this, 'Secret', {
      description: `berth admission webhook path segment for EKS cluster ${props.cluster}`,
      generateSecretString: {
        // Letters and digits only: the value is a URL path segment as it is.
        passwordLength: 48,
        excludePunctuation: true,
        includeSpace: false,
      },
    });
    Validations.of(this.secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'Rotating the path secret must also rewrite the MutatingWebhookConfiguration in the cluster (berth manifests | kubectl apply); a rotation Lambda cannot do that, so rotation is an operator step.',
    });
  }
}

/**
 * Exposes the admission function through an unauthenticated function URL. The output is the
 * webhook URL up to its secret for one cluster, and the function URL itself for a stack that
 * serves clusters by name (each cluster's path follows it: `clusters/<name>/admission/`).
 */
export function exposeAdmission(
  scope: Construct,
  fn: lambda.IFunction,
  options: { readonly byName: boolean },
): lambda.FunctionUrl {
  const url = fn.addFunctionUrl({
    // NONE: the apiserver cannot sign requests; the secret path segment authenticates it.
    authType: lambda.FunctionUrlAuthType.NONE,
    invokeMode: lambda.InvokeMode.BUFFERED,
  });
  if (options.byName) {
    new CfnOutput(scope, 'WebhookUrlOutput', {
      key: STACK_OUTPUTS.webhookUrl,
      value: url.url,
      description:
        "The webhook function's URL: each cluster's webhook is clusters/<name>/admission/<its secret> below it (berth manifests --stack --cluster)",
    });
    return url;
  }
  new CfnOutput(scope, 'WebhookBaseUrlOutput', {
    key: STACK_OUTPUTS.webhookBaseUrl,
    // The URL ends in '/'; the secret follows `admission/`.
    value: Fn.join('', [url.url, 'admission/']),
    description:
      'Webhook URL without its secret: append the secret value (berth manifests --stack does)',
  });
  return url;
}
