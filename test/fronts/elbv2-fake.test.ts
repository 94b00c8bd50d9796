import { describe, expect, it } from 'vitest';
import { isThrottled } from '../../shared/aws/error-codes.js';
import type { CreateTargetGroupInput, ListenerProtocol } from '../../shared/fronts/elbv2.js';
import { FakeElbv2, type FakeElbv2Options } from '../../sim/fakes/elbv2.js';

const VPC = 'vpc-1';

function account(
  options: {
    listenerVisibilityLagMs?: number;
    targetRegistrationDelayMs?: number;
    maxTargetGroups?: number;
    healthCheck?: FakeElbv2Options['healthCheck'];
  } = {},
) {
  const clock = { now: 1_000_000 };
  // Buckets big enough that only the throttling tests meet them.
  const roomy = { capacity: 1e9, refillPerSecond: 1e9 };
  const elb = new FakeElbv2({
    now: () => clock.now,
    buckets: { describe: roomy, registration: roomy, mutating: roomy },
    accountBucket: roomy,
    ...options,
  });
  const nlb = elb.addLoadBalancer({ name: 'games-a', vpcId: VPC });
  return { clock, elb, nlb };
}

const group = (name: string, port = 7000, protocol: ListenerProtocol = 'UDP') =>
  ({
    name,
    protocol,
    port,
    vpcId: VPC,
    tags: [{ key: 'berth.dev/cluster', value: 'c1' }],
  }) satisfies CreateTargetGroupInput;

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (e: unknown) => (e as { name: string }).name,
  );

async function listenerOn(elb: FakeElbv2, loadBalancerArn: string, port: number, name: string) {
  const tg = await elb.createTargetGroup(group(name, port));
  return elb.createListener({
    loadBalancerArn,
    port,
    protocol: 'UDP',
    targetGroupArn: tg.arn,
    tags: [],
  });
}

describe('FakeElbv2', () => {
  it('gives a load balancer an ARN and DNS name of the real shapes', async () => {
    const { elb, nlb } = account();
    expect(nlb.arn).toMatch(
      /^arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer\/net\/games-a\/[0-9a-f]{16}$/,
    );
    expect(nlb.dnsName).toMatch(/^games-a-[0-9a-f]{16}\.elb\.us-east-1\.amazonaws\.com$/);
    expect(await elb.describeLoadBalancers([nlb.arn])).toEqual([nlb]);
    const listener = await listenerOn(elb, nlb.arn, 10_000, 'berth-a');
    expect(listener.arn).toMatch(/:listener\/net\/games-a\/[0-9a-f]{16}\/[0-9a-f]{16}$/);
  });

  it('returns the existing target group for the same name and settings, and refuses other settings', async () => {
    const { elb } = account();
    const first = await elb.createTargetGroup(group('berth-abc'));
    expect(await elb.createTargetGroup(group('berth-abc'))).toEqual(first);
    expect(elb.targetGroups()).toHaveLength(1);
    expect(await codeOf(elb.createTargetGroup(group('berth-abc', 7001)))).toBe(
      'DuplicateTargetGroupName',
    );
    expect(await codeOf(elb.createTargetGroup(group('berth-abc', 7000, 'TCP')))).toBe(
      'DuplicateTargetGroupName',
    );
  });

  it('refuses target group names longer than 32 characters or with other characters', async () => {
    const { elb } = account();
    expect(await codeOf(elb.createTargetGroup(group('b'.repeat(32))))).toBe('ok');
    for (const name of ['b'.repeat(33), 'berth_a', '-berth', 'berth-', 'internal-x', '']) {
      expect(await codeOf(elb.createTargetGroup(group(name)))).toBe('ValidationError');
    }
  });

  it('stops at the Region limit of target groups, yet answers a repeated create', async () => {
    const { elb } = account({ maxTargetGroups: 3 });
    for (const name of ['a', 'b', 'c']) await elb.createTargetGroup(group(name));
    expect(await codeOf(elb.createTargetGroup(group('d')))).toBe('TooManyTargetGroups');
    expect(await codeOf(elb.createTargetGroup(group('a')))).toBe('ok');
  });

  it('defaults to the 3,000 target groups a Region holds', async () => {
    const { elb } = account();
    for (let i = 0; i < 3_000; i++) await elb.createTargetGroup(group(`tg-${i}`));
    expect(await codeOf(elb.createTargetGroup(group('one-more')))).toBe('TooManyTargetGroups');
  });

  it('returns the existing listener for the same port and settings, and DuplicateListener for others', async () => {
    const { elb, nlb } = account();
    const tg = await elb.createTargetGroup(group('berth-a'));
    const other = await elb.createTargetGroup(group('berth-b'));
    const input = {
      loadBalancerArn: nlb.arn,
      port: 10_000,
      protocol: 'UDP' as const,
      targetGroupArn: tg.arn,
      tags: [],
    };
    const first = await elb.createListener(input);
    expect(await elb.createListener(input)).toEqual(first);
    expect(elb.listeners(nlb.arn)).toHaveLength(1);
    expect(await codeOf(elb.createListener({ ...input, targetGroupArn: other.arn }))).toBe(
      'DuplicateListener',
    );
    const tcp = await elb.createTargetGroup(group('berth-tcp', 7000, 'TCP'));
    expect(
      await codeOf(elb.createListener({ ...input, protocol: 'TCP', targetGroupArn: tcp.arn })),
    ).toBe('DuplicateListener');
  });

  it('holds at most 50 listeners on one load balancer', async () => {
    const { elb, nlb } = account();
    for (let i = 0; i < 50; i++) await listenerOn(elb, nlb.arn, 10_000 + i, `berth-${i}`);
    expect(await codeOf(listenerOn(elb, nlb.arn, 10_050, 'berth-50'))).toBe('TooManyListeners');
    // The 50th listener asked for again is still answered.
    expect(await codeOf(listenerOn(elb, nlb.arn, 10_049, 'berth-49'))).toBe('ok');
    const second = elb.addLoadBalancer({ name: 'games-b', vpcId: VPC });
    expect(await codeOf(listenerOn(elb, second.arn, 10_050, 'berth-50'))).toBe('ok');
  });

  it('lets one load balancer only forward to a target group', async () => {
    const { elb, nlb } = account();
    const second = elb.addLoadBalancer({ name: 'games-b', vpcId: VPC });
    const tg = await elb.createTargetGroup(group('berth-a'));
    const input = { port: 10_000, protocol: 'UDP' as const, targetGroupArn: tg.arn, tags: [] };
    await elb.createListener({ ...input, loadBalancerArn: nlb.arn });
    expect(
      await codeOf(elb.createListener({ ...input, port: 10_001, loadBalancerArn: nlb.arn })),
    ).toBe('ok');
    expect(await codeOf(elb.createListener({ ...input, loadBalancerArn: second.arn }))).toBe(
      'TargetGroupAssociationLimit',
    );
    const [view] = (await elb.describeTargetGroups({ names: ['berth-a'] })).items;
    expect(view?.loadBalancerArns).toEqual([nlb.arn]);
  });

  it('refuses a listener whose target group has another protocol or VPC', async () => {
    const { elb, nlb } = account();
    const tcp = await elb.createTargetGroup(group('berth-tcp', 7000, 'TCP'));
    const base = { loadBalancerArn: nlb.arn, port: 10_000, tags: [] };
    expect(
      await codeOf(elb.createListener({ ...base, protocol: 'UDP', targetGroupArn: tcp.arn })),
    ).toBe('IncompatibleProtocols');
    elb.addVpc('vpc-2', '10.1.0.0/16');
    const away = await elb.createTargetGroup({ ...group('berth-away'), vpcId: 'vpc-2' });
    expect(
      await codeOf(elb.createListener({ ...base, protocol: 'UDP', targetGroupArn: away.arn })),
    ).toBe('InvalidConfigurationRequest');
  });

  it('refuses to delete a target group a listener forwards to, then deletes it once the listener is gone', async () => {
    const { elb, nlb } = account();
    const listener = await listenerOn(elb, nlb.arn, 10_000, 'berth-a');
    expect(await codeOf(elb.deleteTargetGroup(listener.targetGroupArn))).toBe('ResourceInUse');
    await elb.deleteListener(listener.arn);
    await elb.deleteTargetGroup(listener.targetGroupArn);
    expect(elb.targetGroups()).toEqual([]);
    expect(await codeOf(elb.deleteTargetGroup(listener.targetGroupArn))).toBe(
      'TargetGroupNotFound',
    );
    expect(await codeOf(elb.deleteListener(listener.arn))).toBe('ListenerNotFound');
  });

  it('answers unknown ARNs with the not-found code of their kind', async () => {
    const { elb, nlb } = account();
    const listener = await listenerOn(elb, nlb.arn, 10_000, 'berth-a');
    const goneLb = nlb.arn.replace(/[0-9a-f]{16}$/, 'ffffffffffffffff');
    const goneTg = listener.targetGroupArn.replace(/[0-9a-f]{16}$/, 'ffffffffffffffff');
    const goneListener = listener.arn.replace(/[0-9a-f]{16}$/, 'ffffffffffffffff');
    expect(await codeOf(elb.describeLoadBalancers([goneLb]))).toBe('LoadBalancerNotFound');
    expect(await codeOf(elb.describeListeners(goneLb))).toBe('LoadBalancerNotFound');
    expect(await codeOf(elb.describeTargets(goneTg))).toBe('TargetGroupNotFound');
    expect(await codeOf(elb.registerTargets(goneTg, [{ ip: '10.0.0.9', port: 7000 }]))).toBe(
      'TargetGroupNotFound',
    );
    expect(await codeOf(elb.describeTargetGroups({ names: ['nope'] }))).toBe('TargetGroupNotFound');
    expect(await codeOf(elb.describeTags([goneListener]))).toBe('ListenerNotFound');
    expect(await codeOf(elb.describeTags([goneTg]))).toBe('TargetGroupNotFound');
    expect(
      await codeOf(
        elb.createListener({
          loadBalancerArn: goneLb,
          port: 1,
          protocol: 'UDP',
          targetGroupArn: listener.targetGroupArn,
          tags: [],
        }),
      ),
    ).toBe('LoadBalancerNotFound');
  });

  it('registers targets inside the VPC CIDR only', async () => {
    const { elb } = account();
    elb.addVpc('vpc-small', '192.168.4.0/24');
    const tg = await elb.createTargetGroup({ ...group('berth-a'), vpcId: 'vpc-small' });
    await elb.registerTargets(tg.arn, [{ ip: '192.168.4.20', port: 7000 }]);
    expect(await codeOf(elb.registerTargets(tg.arn, [{ ip: '192.168.5.20', port: 7000 }]))).toBe(
      'InvalidTarget',
    );
    expect(await codeOf(elb.registerTargets(tg.arn, [{ ip: 'not-an-ip', port: 7000 }]))).toBe(
      'InvalidTarget',
    );
    // Registered just now: `initial` until its registration completes.
    expect(await elb.describeTargets(tg.arn)).toEqual([
      { ip: '192.168.4.20', port: 7000, state: 'initial' },
    ]);
    expect(elb.targets(tg.arn)).toEqual([{ ip: '192.168.4.20', port: 7000 }]);
    await elb.deregisterTargets(tg.arn, [{ ip: '192.168.4.20', port: 7000 }]);
    await elb.deregisterTargets(tg.arn, [{ ip: '192.168.4.20', port: 7000 }]);
    expect(await elb.describeTargets(tg.arn)).toEqual([]);
  });

  it('gives the default VPC 10.0.0.0/16', async () => {
    const { elb } = account();
    const tg = await elb.createTargetGroup(group('berth-a'));
    expect(await codeOf(elb.registerTargets(tg.arn, [{ ip: '10.0.255.254', port: 1 }]))).toBe('ok');
    expect(await codeOf(elb.registerTargets(tg.arn, [{ ip: '10.1.0.1', port: 1 }]))).toBe(
      'InvalidTarget',
    );
  });

  it('describes tags of at most 20 resources', async () => {
    const { elb, nlb } = account();
    const listener = await listenerOn(elb, nlb.arn, 10_000, 'berth-a');
    const tags = await elb.describeTags([listener.targetGroupArn, listener.arn]);
    expect(tags.get(listener.targetGroupArn)).toEqual([{ key: 'berth.dev/cluster', value: 'c1' }]);
    expect(tags.get(listener.arn)).toEqual([]);
    const arns = Array.from({ length: 21 }, () => listener.arn);
    expect(await codeOf(elb.describeTags(arns))).toBe('ValidationError');
    expect(await codeOf(elb.describeTargetGroups({ names: arns }))).toBe('ValidationError');
    expect(await codeOf(elb.describeLoadBalancers(arns))).toBe('ValidationError');
  });

  it('pages target groups 400 at a time from Marker to NextMarker', async () => {
    const { elb } = account();
    for (let i = 0; i < 1_000; i++) await elb.createTargetGroup(group(`tg-${i}`));
    const names: string[] = [];
    const sizes: number[] = [];
    let marker: string | undefined;
    do {
      const page = await elb.describeTargetGroups({}, marker);
      sizes.push(page.items.length);
      names.push(...page.items.map((tg) => tg.name));
      marker = page.nextMarker;
    } while (marker !== undefined);
    expect(sizes).toEqual([400, 400, 200]);
    expect(new Set(names).size).toBe(1_000);
    expect(await codeOf(elb.describeTargetGroups({}, 'garbage'))).toBe('ValidationError');
  });

  it('pages listeners and describes the named target groups only', async () => {
    const { elb, nlb } = account();
    for (let i = 0; i < 3; i++) await listenerOn(elb, nlb.arn, 10_000 + i, `berth-${i}`);
    const page = await elb.describeListeners(nlb.arn);
    expect(page.items.map((l) => l.port)).toEqual([10_000, 10_001, 10_002]);
    expect(page.nextMarker).toBeUndefined();
    const named = await elb.describeTargetGroups({ names: ['berth-2', 'berth-0'] });
    expect(named.items.map((tg) => tg.name)).toEqual(['berth-2', 'berth-0']);
  });

  it('hides a new listener from DescribeListeners for the visibility lag', async () => {
    const { clock, elb, nlb } = account({ listenerVisibilityLagMs: 2_000 });
    const listener = await listenerOn(elb, nlb.arn, 10_000, 'berth-a');
    expect((await elb.describeListeners(nlb.arn)).items).toEqual([]);
    // The service itself knows it: the same create is answered with it.
    expect(await listenerOn(elb, nlb.arn, 10_000, 'berth-a')).toEqual(listener);
    clock.now += 1_999;
    expect((await elb.describeListeners(nlb.arn)).items).toEqual([]);
    clock.now += 1;
    expect((await elb.describeListeners(nlb.arn)).items).toEqual([listener]);
  });

  it('serves a registered target only after the registration delay', async () => {
    const { clock, elb } = account({ targetRegistrationDelayMs: 30_000 });
    const tg = await elb.createTargetGroup(group('berth-a'));
    const target = { ip: '10.0.0.9', port: 7000 };
    await elb.registerTargets(tg.arn, [target]);
    expect(elb.targets(tg.arn)).toEqual([target]);
    expect(elb.servingTargets(tg.arn)).toEqual([]);
    clock.now += 29_999;
    // Registering it again does not restart its health checks.
    await elb.registerTargets(tg.arn, [target]);
    clock.now += 1;
    expect(elb.servingTargets(tg.arn)).toEqual([target]);
  });

  it('is initial for 180 s by default, then serves healthy targets, and fails open when none is', async () => {
    const { clock, elb } = account();
    const tcp = await elb.createTargetGroup(group('berth-tcp', 7000, 'TCP'));
    const udp = await elb.createTargetGroup(group('berth-udp', 7001, 'UDP'));
    const target = { ip: '10.0.0.9', port: 7000 };
    await elb.registerTargets(tcp.arn, [target]);
    await elb.registerTargets(udp.arn, [{ ...target, port: 7001 }]);
    clock.now += 179_999;
    expect(elb.targetHealth(tcp.arn)).toEqual([{ target, state: 'initial' }]);
    expect(elb.servingTargets(tcp.arn)).toEqual([]);
    clock.now += 1;
    expect(elb.targetHealth(tcp.arn)).toEqual([{ target, state: 'healthy' }]);
    expect(elb.servingTargets(tcp.arn)).toEqual([target]);
    // A UDP game server answers no TCP check on its port: unhealthy, and, alone, served anyway.
    expect(elb.targetHealth(udp.arn).map((t) => t.state)).toEqual(['unhealthy']);
    expect(elb.servingTargets(udp.arn)).toEqual([{ ...target, port: 7001 }]);
  });

  it('passes a UDP group whose check is on another port (a node health port), and keeps it in the group', async () => {
    const { clock, elb } = account();
    const healthCheck = { protocol: 'HTTP', port: 10256, path: '/healthz' } as const;
    const udp = await elb.createTargetGroup({ ...group('berth-udp', 7001, 'UDP'), healthCheck });
    expect(udp.healthCheck).toEqual(healthCheck);
    // The same name with another check is another setting.
    expect(await codeOf(elb.createTargetGroup(group('berth-udp', 7001, 'UDP')))).toBe(
      'DuplicateTargetGroupName',
    );
    const target = { ip: '10.0.0.9', port: 7001 };
    await elb.registerTargets(udp.arn, [target]);
    clock.now += 180_000;
    expect(await elb.describeTargets(udp.arn)).toEqual([{ ...target, state: 'healthy' }]);
  });

  it('sends nothing to an unhealthy target while another is healthy', async () => {
    const down = '10.0.0.8';
    const { clock, elb } = account({ healthCheck: (target) => target.ip !== down });
    const tg = await elb.createTargetGroup(group('berth-a', 7000, 'TCP'));
    await elb.registerTargets(tg.arn, [
      { ip: down, port: 7000 },
      { ip: '10.0.0.9', port: 7000 },
    ]);
    clock.now += 180_000;
    expect(elb.servingTargets(tg.arn)).toEqual([{ ip: '10.0.0.9', port: 7000 }]);
  });

  it('loses a load balancer deleted out of band, with its listeners but not its target groups', async () => {
    const { elb, nlb } = account();
    const listener = await listenerOn(elb, nlb.arn, 10_000, 'berth-a');
    elb.setLoadBalancerState(nlb.arn, 'active_impaired');
    expect((await elb.describeLoadBalancers([nlb.arn]))[0]?.state).toBe('active_impaired');
    elb.deleteLoadBalancer(nlb.arn);
    expect(await codeOf(elb.describeListeners(nlb.arn))).toBe('LoadBalancerNotFound');
    expect(await codeOf(elb.deleteListener(listener.arn))).toBe('ListenerNotFound');
    expect((await elb.describeTargetGroups({ names: ['berth-a'] })).items[0]).toMatchObject({
      arn: listener.targetGroupArn,
      loadBalancerArns: [],
    });
  });

  it('throttles each action class from its own bucket with ThrottlingException, then refills', async () => {
    const clock = { now: 0 };
    const roomy = { capacity: 1e9, refillPerSecond: 1e9 };
    const elb = new FakeElbv2({ now: () => clock.now, accountBucket: roomy });
    const nlb = elb.addLoadBalancer({ name: 'games-a', vpcId: VPC });
    for (let i = 0; i < 40; i++) await elb.describeLoadBalancers([nlb.arn]);
    const refused = await elb.describeListeners(nlb.arn).catch((e: unknown) => e);
    expect(isThrottled(refused)).toBe(true);
    expect(refused).toMatchObject({
      name: 'ThrottlingException',
      message: 'Rate exceeded',
      $metadata: { httpStatusCode: 400 },
    });
    // The mutating bucket is apart: a create still goes through.
    expect(await codeOf(elb.createTargetGroup(group('berth-a')))).toBe('ok');
    clock.now += 100; // 10 per second: one token back
    expect(await codeOf(elb.describeListeners(nlb.arn))).toBe('ok');
    expect(await codeOf(elb.describeListeners(nlb.arn))).toBe('ThrottlingException');
    expect(elb.throttled).toBe(2);
    expect(elb.overBucket).toBe(2);
  });

  it('meters other mutating calls at 20 then 3 per second', async () => {
    const clock = { now: 0 };
    const elb = new FakeElbv2({ now: () => clock.now });
    elb.addLoadBalancer({ name: 'games-a', vpcId: VPC });
    for (let i = 0; i < 20; i++) await elb.createTargetGroup(group(`berth-${i}`));
    expect(await codeOf(elb.createTargetGroup(group('berth-x')))).toBe('ThrottlingException');
    clock.now += 333;
    expect(await codeOf(elb.createTargetGroup(group('berth-x')))).toBe('ThrottlingException');
    clock.now += 1;
    expect(await codeOf(elb.createTargetGroup(group('berth-x')))).toBe('ok');
  });

  it('draws every call from one account bucket of 40 at 10 per second as well', async () => {
    const clock = { now: 0 };
    const elb = new FakeElbv2({ now: () => clock.now });
    const nlb = elb.addLoadBalancer({ name: 'games-a', vpcId: VPC });
    const tg = await elb.createTargetGroup(group('berth-a'));
    // 1 create, 19 registrations and 20 describes: no class bucket is empty, the account's is.
    for (let i = 0; i < 19; i++)
      await elb.registerTargets(tg.arn, [{ ip: '10.0.0.9', port: 7000 }]);
    for (let i = 0; i < 20; i++) await elb.describeLoadBalancers([nlb.arn]);
    expect(await codeOf(elb.createTargetGroup(group('berth-b')))).toBe('ThrottlingException');
    expect(await codeOf(elb.describeListeners(nlb.arn))).toBe('ThrottlingException');
    clock.now += 100;
    expect(await codeOf(elb.describeListeners(nlb.arn))).toBe('ok');
  });

  it('meters registrations at 20 then 4 per second', async () => {
    const clock = { now: 0 };
    const elb = new FakeElbv2({ now: () => clock.now });
    elb.addLoadBalancer({ name: 'games-a', vpcId: VPC });
    const tg = await elb.createTargetGroup(group('berth-a'));
    const register = () => elb.registerTargets(tg.arn, [{ ip: '10.0.0.9', port: 7000 }]);
    for (let i = 0; i < 20; i++) await register();
    expect(await codeOf(register())).toBe('ThrottlingException');
    clock.now += 250;
    expect(await codeOf(register())).toBe('ok');
  });

  it('fails the next call of an action as injected, and throttles at the injected rate', async () => {
    const { elb, nlb } = account();
    elb.failNext('CreateListener', 'InternalFailure');
    const failed = await listenerOn(elb, nlb.arn, 10_000, 'berth-a').catch((e: unknown) => e);
    expect(failed).toMatchObject({ name: 'InternalFailure', $metadata: { httpStatusCode: 500 } });
    expect(elb.listeners(nlb.arn)).toEqual([]);
    expect(await codeOf(listenerOn(elb, nlb.arn, 10_000, 'berth-a'))).toBe('ok');
    elb.throttleRate = 1;
    expect(await codeOf(elb.describeListeners(nlb.arn))).toBe('ThrottlingException');
    // Injected throttling is a fault, not a call over the documented buckets.
    expect([elb.throttled, elb.overBucket]).toEqual([1, 0]);
  });

  it('logs every call with its action, time and outcome', async () => {
    const { clock, elb, nlb } = account();
    await listenerOn(elb, nlb.arn, 10_000, 'berth-a');
    clock.now += 5;
    await codeOf(elb.deleteListener('arn:aws:elasticloadbalancing:us-east-1:1:listener/x'));
    expect(elb.calls).toEqual([
      { action: 'CreateTargetGroup', at: 1_000_000, outcome: 'ok' },
      { action: 'CreateListener', at: 1_000_000, outcome: 'ok' },
      { action: 'DeleteListener', at: 1_000_005, outcome: 'error', code: 'ListenerNotFound' },
    ]);
    expect(elb.mutatingCalls()).toBe(3);
    expect(elb.counts.get('CreateListener')).toBe(1);
  });
});
