import { describe, expect, it } from 'vitest';
import { createBerthApp } from '../../infra/berth-app.js';
import { stackSettings } from '../../infra/settings.js';
import { ConfigError } from '../../shared/config/errors.js';

function files(contents: Record<string, string>) {
  return (path: string): string => {
    const text = contents[path];
    if (text === undefined) throw new Error(`ENOENT: no such file '${path}'`);
    return text;
  };
}

function problemsOf(run: () => unknown): readonly string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('stackSettings', () => {
  it('uses every default without context, as a plain cdk synth does', () => {
    const settings = stackSettings({});
    expect(settings.configs[0]?.cluster).toBe('local');
    expect(settings.configDocument).toEqual({});
    expect(settings.nodeIpsCallerArns).toEqual([]);
  });

  it('fills the cluster from -c cluster into the document the functions receive', () => {
    const settings = stackSettings(
      { cluster: 'games', config: 'berth.json' },
      files({ 'berth.json': JSON.stringify({ repair: { intervalSeconds: 300 } }) }),
    );
    expect(settings.configs[0]?.cluster).toBe('games');
    expect(settings.configs[0]?.repair.intervalSeconds).toBe(300);
    expect(settings.configDocument).toEqual({ repair: { intervalSeconds: 300 }, cluster: 'games' });
  });

  it('refuses a config file naming another cluster than -c cluster', () => {
    const problems = problemsOf(() =>
      stackSettings(
        { cluster: 'games', config: 'c.json' },
        files({ 'c.json': '{"cluster":"other"}' }),
      ),
    );
    expect(problems).toEqual([
      'cluster: the config file says "other" but -c cluster=games; one stack serves one cluster, make them agree',
    ]);
  });

  it('reports every config problem at once', () => {
    const problems = problemsOf(() =>
      stackSettings(
        { cluster: 'games', config: 'c.json' },
        files({
          'c.json': JSON.stringify({
            nodePortRange: 'x',
            scale: { minNodes: 5, maxNodes: 1 },
            typo: 1,
          }),
        }),
      ),
    );
    expect(problems).toHaveLength(3);
    expect(problems.some((line) => line.startsWith('nodePortRange:'))).toBe(true);
    expect(problems).toContain(
      'scale.maxNodes: maxNodes must be at least minNodes (maxNodes 1, minNodes 5)',
    );
    expect(problems).toContain('typo: unknown key; remove it or check its spelling');
  });

  it.each([
    ['an unreadable file', {}, /-c config=c.json: cannot read the config file/],
    ['a file that is not JSON', { 'c.json': '{' }, /-c config=c.json: not valid JSON/],
    ['a JSON array', { 'c.json': '[]' }, /-c config=c.json: must hold one JSON object/],
  ])('names %s', (_, contents, message) => {
    const problems = problemsOf(() => stackSettings({ config: 'c.json' }, files(contents)));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(message);
  });

  it('reads node role ARNs allowed to call the ENI IP API', () => {
    const arns =
      'arn:aws:iam::111122223333:role/nodes-a, arn:aws:iam::111122223333:role/path/nodes-b';
    expect(stackSettings({ nodeIpsCallers: arns }).nodeIpsCallerArns).toEqual([
      'arn:aws:iam::111122223333:role/nodes-a',
      'arn:aws:iam::111122223333:role/path/nodes-b',
    ]);
    expect(problemsOf(() => stackSettings({ nodeIpsCallers: 'nodes-a' }))).toEqual([
      '-c nodeIpsCallers: "nodes-a" is not an IAM role ARN (arn:aws:iam::123456789012:role/NAME)',
    ]);
  });

  it('reads the roles allowed to call the capacity API, once each, and the account to make one for', () => {
    const settings = stackSettings({
      capacityCallers:
        'arn:aws:iam::111122223333:role/Matchmaker, arn:aws:iam::111122223333:role/Matchmaker,arn:aws:iam::111122223333:role/teams/Lobby',
      capacityCallerAccount: '444455556666',
    });
    expect(settings.capacityCallerArns).toEqual([
      'arn:aws:iam::111122223333:role/Matchmaker',
      'arn:aws:iam::111122223333:role/teams/Lobby',
    ]);
    expect(settings.capacityCallerAccount).toBe('444455556666');
    const none = stackSettings({});
    expect(none.capacityCallerArns).toEqual([]);
    expect(none.capacityCallerAccount).toBeUndefined();
  });

  it('names the flag, the value and the fix for a capacity caller that is not a role', () => {
    expect(
      problemsOf(() =>
        stackSettings({
          capacityCallers:
            'arn:aws:sts::111122223333:assumed-role/Matchmaker/s1,matchmaker,games=arn:aws:iam::111122223333:role/Matchmaker',
          capacityCallerAccount: '4444-5555-6666',
        }),
      ),
    ).toEqual([
      ...[
        'arn:aws:sts::111122223333:assumed-role/Matchmaker/s1',
        'matchmaker',
        'games=arn:aws:iam::111122223333:role/Matchmaker',
      ].map(
        (value) =>
          `-c capacityCallers: "${value}" is not an IAM role ARN; list the matchmakers' roles as arn:aws:iam::123456789012:role/NAME, or give -c capacityCallerAccount=ACCOUNT for a role the stack makes`,
      ),
      '-c capacityCallerAccount: "4444-5555-6666" is not an AWS account id; give the matchmaker\'s account as its 12 digits (123456789012)',
    ]);
  });
});

describe('stackSettings for several clusters', () => {
  const sections = JSON.stringify({
    scale: { maxNodes: 20 },
    clusters: { 'games-a': {}, 'games-b': { scale: { maxNodes: 40 } } },
  });

  it('serves each cluster of -c clusters by name, with the shared keys when the file has no sections', () => {
    const settings = stackSettings(
      { clusters: 'games-a, games-b', config: 'c.json' },
      files({ 'c.json': '{"repair":{"intervalSeconds":300}}' }),
    );
    expect(settings.byName).toBe(true);
    expect(settings.stackName).toBe('berth');
    expect(settings.configs.map((c) => [c.cluster, c.repair.intervalSeconds])).toEqual([
      ['games-a', 300],
      ['games-b', 300],
    ]);
    expect(settings.configDocument).toEqual({
      repair: { intervalSeconds: 300 },
      clusters: { 'games-a': {}, 'games-b': {} },
    });
  });

  it("takes a file's sections, with or without -c clusters naming them, and -c stack", () => {
    const read = files({ 'c.json': sections });
    for (const context of [
      { config: 'c.json' },
      { config: 'c.json', clusters: 'games-b,games-a' },
    ]) {
      const settings = stackSettings({ ...context, stack: 'berth-eu' }, read);
      expect(settings.stackName).toBe('berth-eu');
      expect(settings.configs.map((c) => [c.cluster, c.scale.maxNodes])).toEqual([
        ['games-a', 20],
        ['games-b', 40],
      ]);
    }
  });

  it('reads which cluster each node role may reach: CLUSTER=ARN for one, a bare ARN for all', () => {
    const a = 'arn:aws:iam::111122223333:role/games-a-nodes';
    const ops = 'arn:aws:iam::111122223333:role/ops=admins';
    const settings = stackSettings({
      clusters: 'games-a,games-b',
      nodeIpsCallers: `games-a=${a}, ${ops}`,
    });
    expect(settings.nodeIpsCallerArns).toEqual([a, ops]);
    expect(settings.nodeIpsCallersByCluster).toEqual({ 'games-a': [a], '*': [ops] });
    expect(
      problemsOf(() => stackSettings({ clusters: 'games-a', nodeIpsCallers: `games-c=${a}` })),
    ).toEqual(['-c nodeIpsCallers: cluster "games-c" is not one of the stack\'s (games-a)']);
    expect(
      problemsOf(() => stackSettings({ cluster: 'games', nodeIpsCallers: `games=${a}` }))[0],
    ).toMatch(/names a cluster; that is for a stack of several clusters/);
    expect(
      stackSettings({ cluster: 'games', nodeIpsCallers: a }).nodeIpsCallersByCluster,
    ).toBeUndefined();
  });

  it('keeps a single cluster as it was: plain paths, berth-<cluster>', () => {
    const settings = stackSettings({ cluster: 'games' });
    expect(settings.byName).toBe(false);
    expect(settings.stackName).toBe('berth-games');
  });

  it('refuses context and file that disagree on the clusters, naming the fix', () => {
    const read = files({ 'c.json': sections, 'one.json': '{"cluster":"games"}' });
    expect(
      problemsOf(() => stackSettings({ config: 'c.json', clusters: 'games-a,games-c' }, read)),
    ).toEqual([
      "-c clusters: must name the config file's sections (games-a, games-b); no section for games-c; not named: games-b",
    ]);
    expect(problemsOf(() => stackSettings({ config: 'c.json', cluster: 'games-a' }, read))).toEqual(
      [
        '-c cluster=games-a: the config file has a section per cluster; deploy them with -c clusters=games-a,games-b',
      ],
    );
    expect(
      problemsOf(() => stackSettings({ config: 'one.json', clusters: 'a,b' }, read))[0],
    ).toMatch(/names one cluster \("games"\) but -c clusters names a, b/);
    expect(problemsOf(() => stackSettings({ clusters: 'a,a' }))).toEqual([
      '-c clusters: a named twice',
    ]);
    expect(problemsOf(() => stackSettings({ cluster: 'games', stack: 'x' }))[0]).toMatch(
      /-c stack: a single-cluster stack is named berth-<cluster>/,
    );
    expect(problemsOf(() => stackSettings({ clusters: 'games a' }))[0]).toMatch(
      /clusters\.games a: cluster: must be a DNS label/,
    );
  });
});

describe('createBerthApp', () => {
  it('traces only what callers sample unless -c tracing says passes or all', () => {
    expect(stackSettings({}).tracing).toBe('callers');
    expect(stackSettings({ tracing: 'passes' }).tracing).toBe('passes');
    expect(stackSettings({ tracing: 'all' }).tracing).toBe('all');
    expect(problemsOf(() => stackSettings({ tracing: 'everything' }))).toEqual([
      '-c tracing: "everything" is not one of callers, passes, all (default callers: every function traces only what its caller samples)',
    ]);
  });

  it('gives the alarm topic a key of its own only with -c alarmTopicKey=true', () => {
    expect(stackSettings({}).alarmTopicKey).toBe(false);
    expect(stackSettings({ alarmTopicKey: 'true' }).alarmTopicKey).toBe(true);
    expect(problemsOf(() => stackSettings({ alarmTopicKey: 'yes' }))).toEqual([
      '-c alarmTopicKey: "yes" is not true or false (default false: the alarm topic is encrypted in transit only)',
    ]);
  });

  it('reserves 50 admission executions unless -c admissionConcurrency says otherwise', () => {
    expect(stackSettings({}).admissionConcurrency).toBe(50);
    expect(stackSettings({ admissionConcurrency: '200' }).admissionConcurrency).toBe(200);
    expect(problemsOf(() => stackSettings({ admissionConcurrency: 'lots' }))).toEqual([
      '-c admissionConcurrency: "lots" is not a whole number of at least 1 (default 50)',
    ]);
  });

  it('reads the VPC of a private cluster, and refuses half of it or ids of the wrong shape', () => {
    expect(
      stackSettings({ vpc: 'vpc-0abc', subnets: 'subnet-01, subnet-02' }).privateNetwork,
    ).toEqual({
      vpcId: 'vpc-0abc',
      subnetIds: ['subnet-01', 'subnet-02'],
      endpoints: true,
    });
    expect(stackSettings({}).privateNetwork).toBeUndefined();
    expect(problemsOf(() => stackSettings({ vpc: 'vpc-0abc' }))).toEqual([
      '-c vpc and -c subnets go together: the VPC of a private EKS endpoint and the private subnets the functions run in',
    ]);
    expect(problemsOf(() => stackSettings({ vpc: 'my-vpc', subnets: 'sn-1' }))).toEqual([
      '-c vpc: "my-vpc" is not a VPC id (vpc-0123456789abcdef0)',
      '-c subnets: "sn-1" is not a subnet id (subnet-0123456789abcdef0)',
    ]);
  });

  it('fails synthesis on a bad config before building anything', () => {
    expect(() =>
      createBerthApp(
        { context: { cluster: 'games', config: 'c.json' } },
        files({ 'c.json': '{"eni":{"minIdle":-1}}' }),
      ),
    ).toThrow(ConfigError);
  });
});
