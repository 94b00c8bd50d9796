/**
 * EKS access entries that let berth's function roles call the Kubernetes API. Each role joins
 * the Kubernetes group `berth`; what that group may do is the ClusterRole `berth manifests`
 * prints (no EKS access policy: the managed ones are far broader than berth's few calls).
 * The cluster's authentication mode must be API or API_AND_CONFIG_MAP.
 */
import * as eks from 'aws-cdk-lib/aws-eks';
import type * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { BERTH_GROUP } from '../../shared/manifests/rbac.js';

/** Props of the cluster access. */
export interface ClusterAccessProps {
  /** The EKS cluster's name (the config's `cluster`). */
  readonly cluster: string;
  /** Function roles by a stable id; one access entry each. */
  readonly roles: Readonly<Record<string, iam.IRole>>;
}

/** One access entry per function role, all in group `berth`. */
export class ClusterAccess extends Construct {
  /** The entries, by the ids given in `roles`. */
  readonly entries: Readonly<Record<string, eks.CfnAccessEntry>>;

  constructor(scope: Construct, id: string, props: ClusterAccessProps) {
    super(scope, id);
    // One entry per role rather than one shared role: each function keeps its own, narrow AWS
    // permissions, and Kubernetes sees them all as members of one group.
    this.entries = Object.fromEntries(
      Object.entries(props.roles).map(([name, role]) => [
        name,
        new eks.CfnAccessEntry(this, name, {
          clusterName: props.cluster,
          principalArn: role.roleArn,
          type: 'STANDARD',
          kubernetesGroups: [BERTH_GROUP],
        }),
      ]),
    );
  }
}
