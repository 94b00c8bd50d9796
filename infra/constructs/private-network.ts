/**
 * Running the functions inside the cluster's VPC, for an EKS cluster whose API endpoint is private
 * only: the functions get the given subnets and a security group that may only speak HTTPS, and
 * the AWS APIs they call are reached through interface VPC endpoints, so the subnets need no NAT.
 * Each endpoint costs by the hour per Availability Zone; a VPC that already has them (or a NAT)
 * can skip them.
 */
import { Fn } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { Construct } from 'constructs';

/** Where the functions run. */
export interface PrivateNetworkProps {
  readonly vpcId: string;
  readonly subnetIds: readonly string[];
  /** Make the interface endpoints for the AWS APIs berth calls (default true). */
  readonly endpoints: boolean;
  /**
   * The functions call ELBv2 (NLB fronts): one endpoint more. Global Accelerator's API (US West
   * (Oregon) only) has no VPC endpoint: accelerator fronts from private subnets need a NAT.
   */
  readonly loadBalancing?: boolean;
}

/** The AWS APIs the functions call, by the function that needs them. */
const ENDPOINT_SERVICES = {
  Dynamodb: ec2.InterfaceVpcEndpointAwsService.DYNAMODB, // every function
  Sqs: ec2.InterfaceVpcEndpointAwsService.SQS, // admission and settle: the settle queue
  SecretsManager: ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER, // admission: the path secret
  Eks: ec2.InterfaceVpcEndpointAwsService.EKS, // every function: DescribeCluster
  Ec2: ec2.InterfaceVpcEndpointAwsService.EC2, // eni and node-ips: the pools
  Lambda: ec2.InterfaceVpcEndpointAwsService.LAMBDA, // node-ips refills, admission scale asks
  AutoScaling: ec2.InterfaceVpcEndpointAwsService.AUTOSCALING, // scale: the node pool
} as const;

/** The VPC placement every berth function shares. */
export class PrivateNetwork extends Construct {
  readonly vpc: ec2.IVpc;
  readonly subnets: readonly ec2.ISubnet[];
  /** The functions' group: HTTPS out only (the API server, the endpoints). */
  readonly securityGroup: ec2.SecurityGroup;

  constructor(scope: Construct, id: string, props: PrivateNetworkProps) {
    super(scope, id);
    this.vpc = ec2.Vpc.fromVpcAttributes(this, 'Vpc', {
      vpcId: props.vpcId,
      availabilityZones: Fn.getAzs(),
    });
    this.subnets = props.subnetIds.map((subnetId, index) =>
      ec2.Subnet.fromSubnetId(this, `Subnet${index}`, subnetId),
    );
    this.securityGroup = new ec2.SecurityGroup(this, 'Functions', {
      vpc: this.vpc,
      description: 'berth functions: HTTPS to the cluster API and the AWS API endpoints',
      allowAllOutbound: false,
    });
    this.securityGroup.addEgressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(443), 'HTTPS out');
    if (!props.endpoints) return;
    const endpointGroup = new ec2.SecurityGroup(this, 'Endpoints', {
      vpc: this.vpc,
      description: 'berth VPC endpoints: HTTPS from the berth functions',
      allowAllOutbound: false,
    });
    endpointGroup.addIngressRule(this.securityGroup, ec2.Port.tcp(443), 'HTTPS from berth');
    const services = {
      ...ENDPOINT_SERVICES,
      // fronts and admission: the NLB pool's listeners and target groups.
      ...(props.loadBalancing
        ? { ElasticLoadBalancing: ec2.InterfaceVpcEndpointAwsService.ELASTIC_LOAD_BALANCING }
        : {}),
    };
    for (const [name, service] of Object.entries(services)) {
      new ec2.InterfaceVpcEndpoint(this, name, {
        vpc: this.vpc,
        service,
        subnets: { subnets: [...this.subnets] },
        securityGroups: [endpointGroup],
        privateDnsEnabled: true,
        // Only the berth functions, through the group above; not the whole VPC's CIDR.
        open: false,
      });
    }
  }
}
