/** AWS answers for node pool adapter tests. */
import type { AutoScalingInstanceDetails } from '@aws-sdk/client-auto-scaling';

/** Instance i-0123456789abcdef0 as DescribeAutoScalingInstances lists it. */
export function asgInstance(
  LifecycleState: string,
  AutoScalingGroupName: string,
): AutoScalingInstanceDetails {
  return {
    InstanceId: 'i-0123456789abcdef0',
    AutoScalingGroupName,
    LifecycleState,
    AvailabilityZone: 'us-east-1a',
    HealthStatus: 'HEALTHY',
    ProtectedFromScaleIn: false,
  };
}
