import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../shared/config/errors.js';
import { parseConfig } from '../../shared/config/schema.js';

const NLB =
  'arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/games/0123456789abcdef';
const GROUP =
  'arn:aws:globalaccelerator::123456789012:accelerator/1234abcd/listener/0123vxyz/endpoint-group/098765zyxwvu';

function problems(document: unknown): string[] {
  try {
    parseConfig(document);
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  return [];
}

describe('fronts config', () => {
  it('has no fronts by default, and fills an NLB pool’s defaults', () => {
    expect(parseConfig({}).fronts).toEqual({});
    expect(parseConfig({ fronts: { nlb: { loadBalancers: [NLB] } } }).fronts.nlb).toEqual({
      loadBalancers: [NLB],
      listenerPorts: { base: 10_000, size: 50_000 },
      placement: 'balanced',
      mode: 'per-game-server',
      // kube-proxy's health endpoint on the node: a UDP game port answers no check.
      healthCheck: { protocol: 'HTTP', port: 10256, path: '/healthz' },
    });
  });

  it('takes a TCP health check on a port the operator names, and refuses a path with it', () => {
    const config = parseConfig({
      fronts: { nlb: { loadBalancers: [NLB], healthCheck: { protocol: 'TCP', port: 27015 } } },
    });
    expect(config.fronts.nlb?.healthCheck).toMatchObject({ protocol: 'TCP', port: 27015 });
    expect(
      problems({
        fronts: {
          nlb: { healthCheck: { protocol: 'TCP', port: 27015, path: '/up' } },
        },
      }),
    ).toEqual([
      'fronts.nlb.healthCheck.path: Forbidden: a TCP health check has no path; leave path out or use "protocol": "HTTP"',
    ]);
    expect(problems({ fronts: { nlb: { healthCheck: { port: 0, path: 'up' } } } })).toEqual([
      expect.stringMatching(/^fronts\.nlb\.healthCheck\.port: /),
      'fronts.nlb.healthCheck.path: a path starts with / and has no spaces',
    ]);
  });

  it('takes slots mode over a host port range of its own, and says what is wrong with one', () => {
    const ranges = { default: '7000-7999', slots: '8000-8031', accel: '9000-9099' };
    const config = parseConfig({
      hostPortRanges: ranges,
      fronts: { nlb: { loadBalancers: [NLB], mode: 'slots', range: 'slots' } },
    });
    expect(config.fronts.nlb).toMatchObject({ mode: 'slots', range: 'slots' });
    const nlb = (change: Record<string, unknown>) => ({
      hostPortRanges: ranges,
      fronts: {
        nlb: { loadBalancers: [NLB], ...change },
        accelerator: { endpointGroupArn: GROUP, range: 'accel' },
      },
    });
    expect(problems(nlb({ mode: 'slots' }))).toEqual([
      'fronts.nlb.range: Required: slots mode makes a listener for each port of one host port range on every game node; name one of "default", "slots", "accel"',
    ]);
    expect(problems(nlb({ mode: 'slots', range: 'nope' }))).toEqual([
      'fronts.nlb.range: "nope" is not a host port range; name one of "default", "slots", "accel" (add one kept for NLB slots to hostPortRanges)',
    ]);
    expect(problems(nlb({ mode: 'slots', range: 'accel' }))).toEqual([
      `fronts.nlb.range: "accel" is the Global Accelerator's range; keep another host port range for NLB slots`,
    ]);
    expect(problems(nlb({ range: 'slots' }))).toEqual([
      'fronts.nlb.range: Forbidden: a range of slots is for "mode": "slots"; set the mode or leave range out',
    ]);
    expect(problems(nlb({ mode: 'fixed' }))).toEqual([
      expect.stringMatching(/^fronts\.nlb\.mode: .*"per-game-server".*"slots"/),
    ]);
  });

  it('takes an accelerator whose range is a configured host port range', () => {
    const config = parseConfig({
      hostPortRanges: { default: '7000-7999', accel: '8000-8099' },
      fronts: { accelerator: { endpointGroupArn: GROUP, range: 'accel' } },
    });
    expect(config.fronts.accelerator).toEqual({ endpointGroupArn: GROUP, range: 'accel' });
  });

  it("takes no member of Object.prototype for a host port range's name", () => {
    expect(
      problems({ fronts: { accelerator: { endpointGroupArn: GROUP, range: 'constructor' } } }),
    ).toEqual([
      'fronts.accelerator.range: "constructor" is not a host port range; name one of "default" (add one kept for the accelerator to hostPortRanges)',
    ]);
  });

  it('reports every bad value at once, each naming its field and the fix', () => {
    expect(
      problems({
        fronts: {
          nlb: { loadBalancers: [NLB, 'games-nlb'], placement: 'random' },
          accelerator: {
            endpointGroupArn: 'arn:aws:globalaccelerator::123456789012:accelerator/x',
            range: 'accel',
          },
        },
      }),
    ).toEqual([
      'fronts.nlb.loadBalancers[1]: must be a Network Load Balancer ARN (arn:aws:elasticloadbalancing:REGION:ACCOUNT:loadbalancer/net/NAME/ID)',
      expect.stringMatching(/^fronts\.nlb\.placement: /),
      'fronts.accelerator.endpointGroupArn: must be a Global Accelerator endpoint group ARN (…:accelerator/ID/listener/ID/endpoint-group/ID)',
      'fronts.accelerator.range: "accel" is not a host port range; name one of "default" (add one kept for the accelerator to hostPortRanges)',
    ]);
  });
});
