/**
 * The reference cluster the cost meter runs in: berth's table in DynamoDB Local, the nodes
 * registered with the Kubernetes API fake and launched in the EC2 fake, the clocks that pace the
 * simulated day, the PassContext its passes run on, and the table's size once it is populated.
 */
import { type AttributeValue, type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { V1Node } from '@kubernetes/client-node';
import type { PassContext } from '../../../shared/app/pass-context.js';
import { type BerthConfig, parseConfig } from '../../../shared/config/schema.js';
import { ClientNodeClusterApi } from '../../../shared/k8s/client-node-cluster-api.js';
import { FakeEc2 } from '../../../sim/fakes/ec2.js';
import type { KubeApiServer } from '../../../sim/fakes/kube-api-server.js';
import { seededRandom } from '../../../sim/random.js';
import { itemSizeBytes } from '../../support/item-size.js';
import { CLUSTER_SHARE, REFERENCE_CONFIG, REFERENCE_FLEET } from '../fleet.js';
import type { DynamoLedger } from '../ledger.js';

/** berth's table in DynamoDB Local. */
export const TABLE = 'berth-cost';
const SUBNET_ID = 'subnet-0cost';
const SUBNET_CIDR = '10.0.0.0/16';
/** The namespace of the game servers and their Services. */
export const NAMESPACE = 'games';
/** A simulated start of day for the clocks that pace operations. */
const START = Date.parse('2026-06-01T00:00:00Z');
/** Ms between game sessions in one cluster: sessions per day, evenly. */
export const SESSION_GAP_MS = 86_400_000 / CLUSTER_SHARE.sessionsPerDay;

/** A node of the reference cluster, as the kubelet registers it. */
function nodeObject(name: string, instanceId: string, index: number): V1Node {
  const { node } = REFERENCE_FLEET;
  return {
    metadata: {
      name,
      labels: { role: 'game-server', 'node.kubernetes.io/instance-type': node.type },
      creationTimestamp: new Date(Date.now() - 86_400_000),
    },
    spec: { providerID: `aws:///us-east-1a/${instanceId}` },
    status: {
      capacity: { cpu: String(node.vcpu), pods: String(node.maxPods) },
      allocatable: { cpu: node.allocatableCpu, pods: String(node.maxPods) },
      conditions: [{ type: 'Ready', status: 'True' }],
      addresses: [
        { type: 'InternalIP', address: `10.0.${index >> 8}.${index & 255}` },
        { type: 'ExternalIP', address: `198.51.${100 + (index >> 8)}.${index & 255}` },
        { type: 'Hostname', address: name },
      ],
    },
  };
}

/** The reference cluster, wired. */
export interface World {
  readonly config: BerthConfig;
  readonly client: DynamoDBClient;
  readonly ledger: DynamoLedger;
  readonly kube: KubeApiServer;
  readonly cluster: ClientNodeClusterApi;
  readonly ec2: FakeEc2;
  readonly nodes: readonly { readonly name: string; readonly instanceId: string }[];
  readonly clocks: { admission: number; eni: number };
  ec2Calls: number;
}

/** Which cluster a world is: its name in the table and how many game nodes it runs. */
export interface WorldShape {
  readonly cluster: string;
  readonly nodes: number;
}

/** The reference cluster at the fleet's size. */
export const REFERENCE_SHAPE: WorldShape = {
  cluster: REFERENCE_CONFIG.cluster,
  nodes: CLUSTER_SHARE.nodes,
};

/** Registers the cluster's nodes, each an instance in the EC2 fake. */
export async function buildWorld(
  client: DynamoDBClient,
  ledger: DynamoLedger,
  kube: KubeApiServer,
  log: (line: string) => void,
  shape: WorldShape = REFERENCE_SHAPE,
): Promise<World> {
  const config = parseConfig({ ...REFERENCE_CONFIG, cluster: shape.cluster });
  const cluster = new ClientNodeClusterApi({ kubeConfig: kube.kubeConfig(), now: Date.now });
  const clocks = { admission: START, eni: START };
  const ec2 = new FakeEc2({ now: () => clocks.eni, random: seededRandom(7), recordCalls: false });
  ec2.addSubnet(SUBNET_ID, SUBNET_CIDR);
  const nodes = Array.from({ length: shape.nodes }, (_, i) => {
    const name = `game-node-${String(i).padStart(3, '0')}`;
    const instanceId = ec2.launchInstance({
      instanceType: REFERENCE_FLEET.node.type,
      subnetId: SUBNET_ID,
    });
    kube.addNode(nodeObject(name, instanceId, i));
    return { name, instanceId };
  });
  log(`  ${nodes.length} ${REFERENCE_FLEET.node.type} nodes registered`);
  return { config, client, ledger, kube, cluster, ec2, nodes, clocks, ec2Calls: 0 };
}

/** The PassContext every pass of the reference cluster runs on. */
export function passContextOf(world: World, now: () => number): PassContext {
  return {
    config: world.config,
    dynamo: world.client,
    tableName: TABLE,
    clusterApi: world.cluster,
    now,
  };
}

/** The reference cluster's items in the table. */
export interface TableSize {
  readonly items: number;
  readonly bytes: number;
  readonly largestItemBytes: number;
  readonly largestItemKey: string;
  readonly itemsByKind: Readonly<Record<string, number>>;
}

/** The table's items of `cluster`: count, bytes billed (item plus 100 bytes), largest item. */
export async function tableSize(client: DynamoDBClient, cluster: string): Promise<TableSize> {
  let items = 0;
  let bytes = 0;
  let largestItemBytes = 0;
  let largestItemKey = '';
  const itemsByKind: Record<string, number> = {};
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: TABLE, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) {
      const pk = item.pk?.S ?? '';
      if (!pk.startsWith(`${cluster}#`)) continue;
      const size = itemSizeBytes(item);
      const kind = pk
        .slice(cluster.length + 1)
        .split('#')
        .slice(0, 2)
        .join('#')
        .replace(/#node$/, '#node#…');
      itemsByKind[kind] = (itemsByKind[kind] ?? 0) + 1;
      items++;
      bytes += size + 100;
      if (size > largestItemBytes) {
        largestItemBytes = size;
        largestItemKey = `${pk} / ${item.sk?.S ?? ''}`;
      }
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return { items, bytes, largestItemBytes, largestItemKey, itemsByKind };
}
