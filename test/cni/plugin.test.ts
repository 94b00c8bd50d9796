import { describe, expect, it } from 'vitest';
import { CniError } from '../../cni/errors.js';
import type { HostNetwork } from '../../cni/host-network.js';
import type { NodeIpClient, ReleaseOutcome } from '../../cni/node-ip-client.js';
import { runCommand } from '../../cni/plugin.js';
import type { IpCommand, Rule } from '../../cni/source-routing.js';
import { networkConfig } from '../../sim/cni-runtime.js';
import { lockedOn } from './locked-on.js';
import { podInvocation } from './pod-invocation.js';
import { earlierWay, releasedInMemory } from './released-memory.js';

const assignment = {
  ip: '10.0.0.17',
  eniId: 'eni-1',
  subnetCidr: '10.0.0.0/24',
  gateway: '10.0.0.1',
  deviceIndex: 1,
  macAddress: '0a:00:00:00:00:01',
};

/** A node whose rules are a list the commands change; `failOn` makes one `ip` command fail. */
function fakeHost(failOn?: string) {
  const rules: Rule[] = [];
  const ran: IpCommand[] = [];
  const host: HostNetwork = {
    view: async () => ({
      links: [{ ifname: 'eth1', address: assignment.macAddress }],
      rules: [...rules],
    }),
    routes: async () => [],
    run: async (commands) => {
      for (const command of commands) {
        if (failOn && command.join(' ').includes(failOn))
          throw new CniError(101, `ip ${command.join(' ')}: failed`);
        ran.push(command);
        const [, kind, verb, direction, cidr, , table, , pref] = command;
        if (kind !== 'rule') continue;
        const ip = (cidr ?? '').replace('/32', '');
        const rule: Rule =
          direction === 'to'
            ? { priority: Number(pref), dst: ip, table: table ?? '' }
            : { priority: Number(pref), src: ip, table: table ?? '' };
        if (verb === 'add') rules.push(rule);
        else
          rules.splice(
            rules.findIndex((r) => r.dst === rule.dst && r.src === rule.src),
            1,
          );
      }
    },
  };
  return { host, rules, ran };
}

function fakeClient(outcome: ReleaseOutcome = 'released') {
  const released: string[] = [];
  const client = {
    assign: async () => assignment,
    lookUp: async () => assignment,
    release: async (ip: string) => {
      released.push(ip);
      return outcome;
    },
  } as unknown as NodeIpClient;
  return { client, released };
}

const invocation = podInvocation;
const stdin = (extra: Record<string, unknown> = {}) =>
  networkConfig({ endpoint: 'http://berth', node: 'node-a' }, extra);

describe('berth-cni commands', () => {
  it('ADD routes the pod out through its ENI: table 1000 + device index, link found by MAC', async () => {
    const { host, rules } = fakeHost();
    const { client } = fakeClient();
    const result = await runCommand(invocation('ADD'), stdin(), {
      client: () => client,
      host,
      locked: lockedOn(host),
      released: releasedInMemory(),
      ...earlierWay,
    });
    expect(result).toMatchObject({ ips: [{ address: '10.0.0.17/24', gateway: '10.0.0.3' }] });
    expect(rules).toEqual([
      { priority: 512, dst: '10.0.0.17', table: 'main' },
      { priority: 1536, src: '10.0.0.17', table: '1001' },
    ]);
  });

  it('an ADD whose routing fails gives the address back and leaves no rule behind', async () => {
    const { host, rules } = fakeHost('rule add from');
    const { client, released } = fakeClient();
    const failed = await runCommand(invocation('ADD'), stdin(), {
      client: () => client,
      host,
      locked: lockedOn(host),
      released: releasedInMemory(),
      ...earlierWay,
    }).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(CniError);
    expect((failed as CniError).code).toBe(101);
    expect(released).toEqual(['10.0.0.17']);
    expect(rules).toEqual([]);
  });

  it('an ADD whose ENI is not on the node yet fails with "try again later" and frees the address', async () => {
    const { host } = fakeHost();
    const { client, released } = fakeClient();
    const unknownMac = { ...assignment, macAddress: '0a:ff:ff:ff:ff:ff' };
    const failed = await runCommand(invocation('ADD'), stdin(), {
      client: () => ({ ...client, assign: async () => unknownMac }) as unknown as NodeIpClient,
      host,
      locked: lockedOn(host),
      released: releasedInMemory(),
      ...earlierWay,
    }).catch((error: unknown) => error);
    expect((failed as CniError).code).toBe(11);
    expect(released).toEqual(['10.0.0.17']);
  });

  it('routes an address the answer places on no secondary ENI by the main table', async () => {
    const { ip, eniId, subnetCidr, gateway } = assignment;
    for (const placed of [
      // The node IP API's contract shape alone, as another server may answer.
      { ip, eniId, subnetCidr, gateway },
      { ...assignment, deviceIndex: 0 },
    ]) {
      const { host, ran } = fakeHost();
      const { client } = fakeClient();
      const deps = {
        client: () => ({ ...client, assign: async () => placed, lookUp: async () => placed }),
        host,
        locked: lockedOn(host),
        released: releasedInMemory(),
        ...earlierWay,
      } as unknown as Parameters<typeof runCommand>[2];
      const result = await runCommand(invocation('ADD'), stdin(), deps);
      expect(result).toMatchObject({ ips: [{ address: '10.0.0.17/24' }] });
      await runCommand(invocation('CHECK'), stdin({ prevResult: result }), deps);
      expect(ran).toEqual([]);
    }
  });

  it('DEL removes the pod’s routing only when berth released the address for this holder', async () => {
    for (const [outcome, left] of [
      ['released', 0],
      ['already-free', 0],
      ['held-by-another', 2],
      // A holder berth refuses as malformed was never set up by berth: its routing is not ours.
      ['refused', 2],
    ] as const) {
      const { host, rules } = fakeHost();
      const { client } = fakeClient(outcome);
      await runCommand(invocation('ADD'), stdin(), {
        client: () => client,
        host,
        locked: lockedOn(host),
        released: releasedInMemory(),
        ...earlierWay,
      });
      const prevResult = { ips: [{ address: '10.0.0.17/24' }] };
      await runCommand(invocation('DEL'), stdin({ prevResult }), {
        client: () => client,
        host,
        locked: lockedOn(host),
        released: releasedInMemory(),
        ...earlierWay,
      });
      expect(rules, outcome).toHaveLength(left);
    }
  });

  it('records a DEL only once it is done: a release that failed is asked again on the retry', async () => {
    const { host } = fakeHost();
    const { client } = fakeClient();
    const released = releasedInMemory();
    let lookUps = 0;
    let failing = true;
    const flaky = {
      ...client,
      lookUp: async () => {
        lookUps++;
        return assignment;
      },
      release: async () => {
        if (failing) throw new CniError(11, 'berth did not answer');
        return 'released';
      },
    } as unknown as NodeIpClient;
    const deps = { client: () => flaky, host, locked: lockedOn(host), released, ...earlierWay };
    await expect(runCommand(invocation('DEL'), stdin(), deps)).rejects.toThrow(/did not answer/);
    expect(released.keys.size).toBe(0);
    failing = false;
    await runCommand(invocation('DEL'), stdin(), deps);
    expect(lookUps).toBe(2);
    expect(released.keys.size).toBe(1);
    // kubelet's next teardown: answered on the node.
    await runCommand(invocation('DEL'), stdin(), deps);
    expect(lookUps).toBe(2);
  });

  it('CHECK names what is missing from the node’s routing', async () => {
    const { host } = fakeHost();
    const { client } = fakeClient();
    const failed = await runCommand(invocation('CHECK'), stdin(), {
      client: () => client,
      host,
      locked: lockedOn(host),
      released: releasedInMemory(),
      ...earlierWay,
    }).catch((error: unknown) => error);
    expect((failed as CniError).code).toBe(102);
    expect((failed as CniError).message).toMatch(/no rule "to 10\.0\.0\.17 lookup main"/);
  });
});
