/**
 * The NLB pool as the pod webhook reads it, through the admission function's own wiring: a
 * member someone else deleted is skipped and reported (a log line, `/v1/status`), the others
 * still serve; an ELBv2 that fails is named in the answer, never taken for the table.
 */
import { describe, expect, it } from 'vitest';
import { nlbPoolStatusLines } from '../../cli/status-text.js';
import { frontsWiring } from '../../shared/app/fronts.js';
import { clusterAdmission } from '../../shared/app/lambda-admission.js';
import { parseConfig } from '../../shared/config/schema.js';
import { InProcessSharedBudget } from '../../shared/ec2/fair-share.js';
import type { NlbPoolStatus } from '../../shared/fronts/pool-directory.js';
import { FRONTS_ANNOTATION } from '../../shared/vocabulary/labels.js';
import { FakeCustomRoutingAccelerator } from '../../sim/fakes/accelerator.js';
import { FakeElbv2 } from '../../sim/fakes/elbv2.js';
import { MemoryFrontStore } from '../../sim/fakes/front-store.js';
import { applyPatch } from '../../sim/fakes/json-patch.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { MemorySlotChainStore } from '../../sim/fakes/slot-chain-store.js';
import { review } from '../../sim/reviews.js';
import { gamePod } from '../hostports/support.js';
import { freshTable } from '../support/dynamo.js';

const SECRET = 'pool-directory-test-secret';
let clusterSeq = 0;

async function admissionOverPool() {
  const now = () => 1_700_000_000_000;
  const elbv2 = new FakeElbv2({ now });
  const [gone, kept] = ['games-a', 'games-b'].map((name) =>
    elbv2.addLoadBalancer({ name, vpcId: 'vpc-1' }),
  );
  if (!gone || !kept) throw new Error('two load balancers');
  const cluster = `pool${clusterSeq++}`;
  const config = parseConfig({
    cluster,
    fronts: { nlb: { loadBalancers: [gone.arn, kept.arn] } },
  });
  const logged: string[] = [];
  const fronts = frontsWiring(
    {
      config,
      now,
      tables: {
        store: new MemoryFrontStore(),
        chains: new MemorySlotChainStore(),
        budget: new InProcessSharedBudget(now).for(cluster),
        lease: new FakeLease(now),
      },
    },
    {
      account: { elbv2, accelerator: new FakeCustomRoutingAccelerator({ now }), scope: 'test' },
      queue: { submit: async () => undefined },
      sleep: async () => undefined,
      random: () => 0.5,
      log: { warn: (line) => logged.push(line) },
    },
  );
  const { client, tableName } = await freshTable();
  const unavailable: string[] = [];
  const { api } = clusterAdmission({
    config,
    dynamo: client,
    tableName,
    reader: {
      getPod: async () => undefined,
      getNode: async () => undefined,
      listPods: async function* () {},
      listServices: async function* () {},
      listServiceCidrs: async () => [],
    },
    queue: { submit: async () => undefined },
    observers: {
      onSettleLost: () => undefined,
      onDecision: () => undefined,
      onUnavailable: (fault) => unavailable.push(fault.message),
    },
    ...(fronts ? { fronts } : {}),
  });
  const handle = api(SECRET);
  const spec = [{ name: 'game', containerPort: 7777, front: 'nlb' }];
  const create = async (name: string) => {
    const pod = gamePod(spec, { name });
    const answer = await handle({
      method: 'POST',
      path: `/admission/${SECRET}`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(review({ resource: 'pods', operation: 'CREATE', name, object: pod })),
    });
    return { pod, answer };
  };
  const status = async () => {
    const answer = await handle({ method: 'GET', path: `/v1/status/${SECRET}`, body: undefined });
    return JSON.parse(answer.body) as Record<string, unknown>;
  };
  return { elbv2, gone, kept, create, status, logged, unavailable };
}

function verdictOf(body: string | undefined) {
  const { response } = JSON.parse(body ?? '{}') as {
    response: { allowed: boolean; patch?: string; status?: { code: number; message: string } };
  };
  return response;
}

describe('the NLB pool with a member deleted by someone else', () => {
  it('skips the gone load balancer, places on the others, and says which one is gone', async () => {
    const t = await admissionOverPool();
    t.elbv2.deleteLoadBalancer(t.gone.arn);
    const { pod, answer } = await t.create('gs-1');
    expect(answer.statusCode).toBe(200);
    const response = verdictOf(answer.body);
    expect(response.allowed).toBe(true);
    const patch = JSON.parse(Buffer.from(response.patch ?? '', 'base64').toString('utf8'));
    const { annotations } = applyPatch(pod, patch).metadata as {
      annotations: Record<string, string>;
    };
    const told = JSON.parse(annotations[FRONTS_ANNOTATION] ?? '{}') as Record<string, string>;
    expect(told.game).toMatch(new RegExp(`^${t.kept.dnsName.replaceAll('.', '\\.')}:\\d+$`));
    expect(t.unavailable).toEqual([]);
    expect(t.logged).toEqual([
      expect.stringContaining(`NLB pool: ${t.gone.arn} is gone (LoadBalancerNotFound)`),
    ]);
    const { nlbPool } = (await t.status()) as { nlbPool: NlbPoolStatus };
    expect(nlbPool).toEqual({
      members: [{ arn: t.kept.arn, dnsName: t.kept.dnsName }],
      missing: [{ arn: t.gone.arn, why: 'LoadBalancerNotFound' }],
    });
    // `berth status` prints it.
    expect(nlbPoolStatusLines(nlbPool)).toEqual([
      'NLB pool: 1 load balancer serving, 1 gone',
      `  gone: ${t.gone.arn} (LoadBalancerNotFound): skipped until it is removed from the pool`,
    ]);
  });

  it('names ELBv2, not the table, when ELBv2 does not answer, and answers 503', async () => {
    const t = await admissionOverPool();
    t.elbv2.throttleRate = 1;
    const { answer } = await t.create('gs-1');
    expect(answer.statusCode).toBe(503);
    const message = (JSON.parse(answer.body) as { error: string }).error;
    expect(message).toMatch(/^ELBv2 did not answer DescribeLoadBalancers \(ThrottlingException: /);
    expect(message).not.toMatch(/DynamoDB|store/);
  });

  it('names ELBv2 and answers 500 when ELBv2 refuses the call: it is not an outage', async () => {
    const t = await admissionOverPool();
    t.elbv2.failNext('DescribeLoadBalancers', 'AccessDenied', 'not authorized');
    const { answer } = await t.create('gs-1');
    expect(answer.statusCode).toBe(500);
    const message = (JSON.parse(answer.body) as { error: string }).error;
    expect(message).toMatch(
      /^ELBv2 refused DescribeLoadBalancers \(AccessDenied: not authorized\)/,
    );
    expect(message).not.toMatch(/DynamoDB/);
  });
});
