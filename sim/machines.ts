/**
 * The machines behind the simulated nodes: one EC2 instance per node in one subnet of the EC2
 * fake (so the ENI pass and the node IP API act on real-shaped instances, ENIs and limits), and
 * the Auto Scaling group berth's scale pass grows and shrinks, whose new nodes join the cluster
 * after a provisioning delay in day time.
 */
import type { NodePool, PoolChange, PoolNode, PoolState } from '../shared/node-pool/node-pool.js';
import { instanceIdOf } from '../shared/node-pool/provider-id.js';
import type { SimClock } from './clock.js';
import { FakeEc2 } from './fakes/ec2.js';

/** Where the day's nodes run. */
export interface MachineOptions {
  readonly instanceType: string;
  readonly subnetCidr: string;
  /** Day seconds from a pool growth to the node joining the cluster (EC2 launch, boot, kubelet). */
  readonly provisionSeconds: number;
  readonly minSize: number;
  readonly maxSize: number;
}

const SUBNET_ID = 'subnet-0sim0000000000001';
const ZONE = 'us-east-1a';

/** The account of the day: the EC2 fake, its one subnet, and the instances launched in it. */
export class SimMachines {
  readonly ec2: FakeEc2;
  readonly subnetId = SUBNET_ID;
  readonly instanceType: string;
  /** Every instance launched, by provider id. */
  readonly #launched = new Set<string>();

  constructor(clock: SimClock, options: Pick<MachineOptions, 'instanceType' | 'subnetCidr'>) {
    this.ec2 = new FakeEc2({ now: clock.now, recordCalls: false });
    this.ec2.addSubnet(SUBNET_ID, options.subnetCidr, ZONE);
    this.instanceType = options.instanceType;
  }

  /** Launches a node's instance; answers its `spec.providerID`. */
  launch(): string {
    const instanceId = this.ec2.launchInstance({
      instanceType: this.instanceType,
      subnetId: SUBNET_ID,
    });
    const providerId = `aws:///${ZONE}/${instanceId}`;
    this.#launched.add(providerId);
    return providerId;
  }

  /** Instances running now. */
  running(): number {
    let running = 0;
    for (const providerId of this.#launched) if (this.isRunning(providerId)) running++;
    return running;
  }

  /** Terminates the instance behind `providerId` (a failed or released node). */
  terminate(providerId: string | undefined): void {
    const instanceId = instanceIdOf(providerId);
    if (instanceId) this.ec2.terminateInstance(instanceId);
  }

  /** Whether the instance behind `providerId` still runs. */
  isRunning(providerId: string | undefined): boolean {
    const instanceId = instanceIdOf(providerId);
    return instanceId !== undefined && this.ec2.instanceState(instanceId) === 'running';
  }
}

/**
 * The day's Auto Scaling group as berth's `NodePool` sees it: growth is launched at once and
 * joins `provisionSeconds` later (`due`); a release terminates the instance and lowers the size.
 */
export class SimNodePool implements NodePool {
  readonly type = 'asg';
  readonly #clock: SimClock;
  readonly #machines: SimMachines;
  readonly #options: MachineOptions;
  /** Day ms each launched node joins at. */
  #launching: number[] = [];
  /** Nodes launched that have not joined the cluster yet. */
  get onTheirWay(): number {
    const now = this.#clock.dayMs;
    return this.#launching.filter((at) => at > now).length;
  }

  /** Growths asked for, and nodes released, over the day. */
  launched = 0;
  released = 0;

  constructor(clock: SimClock, machines: SimMachines, options: MachineOptions) {
    this.#clock = clock;
    this.#machines = machines;
    this.#options = options;
  }

  async describe(): Promise<PoolState> {
    return {
      desiredSize: this.#machines.running() + this.#launching.length,
      minSize: this.#options.minSize,
      maxSize: this.#options.maxSize,
    };
  }

  async growTo(size: number): Promise<PoolChange> {
    const desired = this.#machines.running() + this.#launching.length;
    const target = Math.min(size, this.#options.maxSize);
    if (target <= desired) {
      return { applied: false, description: `size ${desired} already covers ${size}` };
    }
    const joinsAt = this.#clock.dayMs + this.#options.provisionSeconds * 1000;
    for (let i = desired; i < target; i++) this.#launching.push(joinsAt);
    this.launched += target - desired;
    return { applied: true, description: `desired size ${desired} → ${target}` };
  }

  async releaseInstance(node: PoolNode): Promise<PoolChange> {
    this.#machines.terminate(node.providerId);
    this.released++;
    return { applied: true, description: `terminated the instance of ${node.name}` };
  }

  /** How many launched nodes have joined by now; each is counted once. */
  due(): number {
    const now = this.#clock.dayMs;
    const joined = this.#launching.filter((at) => at <= now).length;
    this.#launching = this.#launching.filter((at) => at > now);
    return joined;
  }
}
