/** The stack settings of `-c accelerator=true`: the accelerator the stack makes for its clusters. */
import { describe, expect, it } from 'vitest';
import { stackSettings, withEndpointGroupArn } from '../../infra/settings.js';
import { ConfigError } from '../../shared/config/errors.js';

const ACCELERATOR_CONTEXT = {
  accelerator: 'true',
  acceleratorSubnets: 'subnet-0a1b, subnet-0c2d',
  config: 'berth.json',
};

function settingsFor(document: object, context: Record<string, unknown>) {
  return stackSettings(context, (path) => {
    if (path !== 'berth.json') throw new Error(`unexpected read of ${path}`);
    return JSON.stringify(document);
  });
}

function problemsOf(document: object, context: Record<string, unknown>): readonly string[] {
  try {
    settingsFor(document, context);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

const ACCELERATED = {
  hostPortRanges: { default: '7000-8000', accelerated: '9000-9099' },
  fronts: { accelerator: { range: 'accelerated' } },
};

describe('stackSettings with -c accelerator=true', () => {
  it('takes the subnets, the default public ports and the destination range from the config', () => {
    const settings = settingsFor(ACCELERATED, { ...ACCELERATOR_CONTEXT, cluster: 'games' });
    expect(settings.accelerator).toEqual({
      subnetIds: ['subnet-0a1b', 'subnet-0c2d'],
      listenerPorts: { base: 1024, size: 64_512 },
      destinationPorts: { base: 9000, size: 100 },
    });
    // The functions' document stays as written: the stack fills in the ARN it makes.
    expect(settings.configDocument).toEqual({ ...ACCELERATED, cluster: 'games' });
  });

  it('takes the public ports from -c acceleratorPorts', () => {
    const settings = settingsFor(ACCELERATED, {
      ...ACCELERATOR_CONTEXT,
      cluster: 'games',
      acceleratorPorts: '10000-40000',
    });
    expect(settings.accelerator?.listenerPorts).toEqual({ base: 10_000, size: 30_001 });
  });

  it('makes no accelerator without -c accelerator, and refuses its other keys alone', () => {
    expect(settingsFor({}, { config: 'berth.json' }).accelerator).toBeUndefined();
    expect(problemsOf({}, { config: 'berth.json', acceleratorSubnets: 'subnet-0a1b' })).toEqual([
      '-c acceleratorSubnets and -c acceleratorPorts shape the accelerator the stack makes: add -c accelerator=true',
    ]);
  });

  it('reports a missing section, a given ARN, missing or bad subnets and bad ports at once', () => {
    expect(
      problemsOf(
        {},
        {
          accelerator: 'yes',
          config: 'berth.json',
          acceleratorSubnets: 'sn-1',
          acceleratorPorts: 'x',
        },
      ),
    ).toEqual([
      '-c accelerator: "yes" is not true or false (default false: the config names an existing endpoint group, if any)',
      '-c acceleratorSubnets: "sn-1" is not a subnet id (subnet-0123456789abcdef0)',
      expect.stringMatching(/^-c acceleratorPorts: .* \(write it as "1024-65535"\)$/),
      '-c acceleratorSubnets and -c acceleratorPorts shape the accelerator the stack makes: add -c accelerator=true',
    ]);
    const arn = 'arn:aws:globalaccelerator::123456789012:accelerator/a/listener/l/endpoint-group/g';
    expect(
      problemsOf(
        {
          ...ACCELERATED,
          fronts: { accelerator: { range: 'accelerated', endpointGroupArn: arn } },
        },
        { accelerator: 'true', config: 'berth.json' },
      ),
    ).toEqual([
      '-c accelerator=true: the stack makes the endpoint group; remove fronts.accelerator.endpointGroupArn from the config (or drop -c accelerator to use that one)',
      '-c accelerator=true needs -c acceleratorSubnets=subnet-…,subnet-…: the subnets of the game-server nodes',
    ]);
    expect(problemsOf({}, ACCELERATOR_CONTEXT)).toEqual([
      '-c accelerator=true: the config has no fronts.accelerator; give it one naming the host port range kept for the accelerator ({ "range": "NAME" })',
    ]);
  });

  it('refuses a range the config does not have, and clusters whose ranges differ', () => {
    expect(
      problemsOf({ fronts: { accelerator: { range: 'nope' } } }, ACCELERATOR_CONTEXT),
    ).toContainEqual(
      expect.stringMatching(/^fronts\.accelerator\.range: "nope" is not a host port range/),
    );
    const twoClusters = {
      ...ACCELERATED,
      clusters: {
        'games-a': {},
        'games-b': { hostPortRanges: { default: '7000-8000', accelerated: '9100-9199' } },
      },
    };
    expect(problemsOf(twoClusters, ACCELERATOR_CONTEXT)).toEqual([
      "fronts.accelerator.range: the stack's one accelerator has one destination port range; every cluster's range must be the same ports",
    ]);
  });
});

describe('withEndpointGroupArn', () => {
  it("fills the shared section and each cluster's own, and nothing else", () => {
    const document = {
      fronts: { nlb: { loadBalancers: [] }, accelerator: { range: 'a' } },
      clusters: {
        'games-a': {},
        'games-b': { fronts: { accelerator: { range: 'b' } } },
        'games-c': { repair: { intervalSeconds: 60 } },
      },
    };
    expect(withEndpointGroupArn(document, 'ARN')).toEqual({
      fronts: { nlb: { loadBalancers: [] }, accelerator: { range: 'a', endpointGroupArn: 'ARN' } },
      clusters: {
        'games-a': {},
        'games-b': { fronts: { accelerator: { range: 'b', endpointGroupArn: 'ARN' } } },
        'games-c': { repair: { intervalSeconds: 60 } },
      },
    });
    expect(withEndpointGroupArn({ cluster: 'games' }, 'ARN')).toEqual({ cluster: 'games' });
  });
});
