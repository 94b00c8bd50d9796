import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../shared/config/errors.js';
import { parseConfig } from '../../shared/config/schema.js';
import { scalePolicy } from '../../shared/scale/policy.js';

function problemsOf(document: unknown): readonly string[] {
  try {
    parseConfig(document);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected the config to be rejected');
}

describe('parseConfig', () => {
  it('fills every default of the contract', () => {
    const config = parseConfig({});
    expect(config.cluster).toBe('local');
    expect(config.serviceCIDRs).toHaveLength(1);
    expect(config.nodePortRange).toEqual({ base: 30000, size: 2768 });
    expect(config.hostPortRanges).toEqual({ default: { base: 7000, size: 1001 } });
    expect(config.nodeAddressTypes).toEqual(['ExternalIP', 'InternalIP']);
    expect(config.repair).toEqual({ intervalSeconds: 180, leakGracePasses: 3 });
    expect(config.scale.nodePool).toEqual({ type: 'none' });
    expect(config.eni).toEqual({
      intervalSeconds: 60,
      minIdle: 2,
      maxIdle: 8,
      cooldownSeconds: 60,
      stickySeconds: 300,
    });
  });

  it('reports unknown keys and every invalid value together, one line each, path first', () => {
    const problems = problemsOf({
      bogus: 1,
      serviceCIDRs: ['10.0.0.0/8', 'nope'],
      nodePortRange: '40000-30000',
      scale: { minNodes: 2, maxNodes: 3, extra: true, nodePool: { type: 'asg' } },
      eni: { minIdle: -1 },
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        'bogus: unknown key; remove it or check its spelling',
        expect.stringMatching(/^serviceCIDRs\[0\]: "10.0.0.0\/8" is too large/),
        expect.stringMatching(/^serviceCIDRs\[1\]: "nope" is not a CIDR block/),
        expect.stringMatching(
          /^nodePortRange: end port cannot be less than start port: 40000-30000/,
        ),
        'scale.extra: unknown key; remove it or check its spelling',
        'scale.nodePool.name: required: the Auto Scaling group name',
        expect.stringMatching(/^eni.minIdle: /),
      ]),
    );
    expect(problems).toHaveLength(7);
  });

  it('reports a bad entry of a list that is also too long, and a document of null', () => {
    expect(problemsOf({ serviceCIDRs: ['bad', '10.1.0.0/16', 'fd00::/108'] })).toEqual([
      expect.stringMatching(/^serviceCIDRs\[0\]: "bad" is not a CIDR block/),
      'serviceCIDRs: takes at most two CIDRs, one per IP family',
    ]);
    expect(problemsOf(null)).toEqual(['(root): must be an object, not null']);
  });

  it('says what a range name must be when one is not', () => {
    expect(problemsOf({ hostPortRanges: { Big_One: '7000-7100' } })).toEqual([
      'hostPortRanges.Big_One: range names are lower-case DNS labels',
    ]);
  });

  it('reports a __proto__ key of a map of names, which the schema alone would drop unseen', () => {
    // JSON.parse keeps "__proto__" as an own key, as a file or BERTH_CONFIG is read.
    expect(problemsOf(JSON.parse('{"hostPortRanges": {"__proto__": "7000-7100"}}'))).toEqual([
      'hostPortRanges.__proto__: range names are lower-case DNS labels',
    ]);
    expect(
      problemsOf(JSON.parse('{"hostPortQuotas": {"games": 2, "__proto__": 5}, "bogus": 1}')),
    ).toEqual([
      'hostPortQuotas.__proto__: namespace names are lower-case DNS labels',
      'bogus: unknown key; remove it or check its spelling',
    ]);
    expect(problemsOf(JSON.parse('{"scale": {"__proto__": {"maxNodes": 1}}}'))).toEqual([
      'scale.__proto__: unknown key; remove it or check its spelling',
    ]);
  });

  it("keeps names of Object.prototype's members as ordinary keys", () => {
    const config = parseConfig({
      hostPortRanges: { default: '7000-7100', constructor: '8000-8100' },
      hostPortQuotas: { constructor: 4, tostring: 1 },
    });
    expect(Object.keys(config.hostPortRanges)).toEqual(['default', 'constructor']);
    expect(config.hostPortRanges.constructor).toEqual({ base: 8000, size: 101 });
    expect(config.hostPortQuotas).toEqual({ constructor: 4, tostring: 1 });
  });

  it('caps settle.delaySeconds where the settle step would break the 30 s release promise', () => {
    expect(parseConfig({ settle: { delaySeconds: 30 } }).settle.delaySeconds).toBe(30);
    expect(problemsOf({ settle: { delaySeconds: 60 } })).toEqual([
      'settle.delaySeconds: 60 is out of range 1-30: the settle step first looks this long after the review, and a value given back must be free within 30 s of its commit',
    ]);
    expect(problemsOf({ settle: { delaySeconds: 0 } })).toEqual([
      'settle.delaySeconds: 0 is out of range 1-30: values are freed only after the apiserver commits, so 0 is not allowed',
    ]);
  });

  it('rejects named host port ranges that share only an end port', () => {
    const problems = problemsOf({ hostPortRanges: { default: '7000-8000', lobby: '8000-8100' } });
    expect(problems).toEqual([
      expect.stringMatching(/^hostPortRanges.lobby: 8000-8100 overlaps range "default"/),
    ]);
  });

  it('takes a service CIDR of 8 addresses or more, as the kube-apiserver does', () => {
    for (const cidr of ['10.100.0.0/29', 'fd00::/125']) {
      expect(parseConfig({ serviceCIDRs: [cidr] }).serviceCIDRs).toHaveLength(1);
    }
    expect(problemsOf({ serviceCIDRs: ['10.100.0.0/30'] })).toEqual([
      'serviceCIDRs[0]: "10.100.0.0/30" is too small: the service cluster IP range must be at least 8 IP addresses',
    ]);
  });

  it('takes an IPv6 service CIDR up to a /64 and names the fix for a wider one', () => {
    for (const cidr of ['fd00:1:2:3::/64', 'fd7a:2b3c::/108']) {
      expect(parseConfig({ serviceCIDRs: ['10.100.0.0/16', cidr] }).serviceCIDRs).toHaveLength(2);
    }
    expect(problemsOf({ serviceCIDRs: ['10.100.0.0/16', 'fd00:1:2:2::/63'] })).toEqual([
      'serviceCIDRs[1]: "fd00:1:2:2::/63" is too large: an IPv6 service range is at most a /64, as the kube-apiserver\'s IPAddress allocator allows; use fd00:1:2:2::/64 or a longer prefix',
    ]);
    expect(problemsOf({ serviceCIDRs: ['10.96.0.0/11'] })).toEqual([
      'serviceCIDRs[0]: "10.96.0.0/11" is too large: at most 20 host bits (an IPv4 /12), as the kube-apiserver allows',
    ]);
  });

  it('rejects two service CIDRs of one family, and more than two', () => {
    expect(problemsOf({ serviceCIDRs: ['10.0.0.0/16', '10.1.0.0/16'] })).toEqual([
      expect.stringMatching(/^serviceCIDRs\[1\]: 10.1.0.0\/16 is of the same family/),
    ]);
    expect(problemsOf({ serviceCIDRs: ['10.0.0.0/16', 'fd00::/108', '10.2.0.0/16'] })).toEqual([
      'serviceCIDRs: takes at most two CIDRs, one per IP family',
    ]);
  });

  it('rejects minimums above maximums', () => {
    expect(problemsOf({ scale: { minNodes: 5, maxNodes: 2 } })).toEqual([
      'scale.maxNodes: maxNodes must be at least minNodes (maxNodes 2, minNodes 5)',
    ]);
    expect(problemsOf({ eni: { mode: 'cidr' } })).toEqual([
      'eni.mode: must be one of "ip", "prefix", not the string "cidr"',
    ]);
    expect(problemsOf({ eni: { minIdle: 9 } })).toEqual([
      'eni.maxIdle: maxIdle must be at least minIdle (maxIdle 8, minIdle 9)',
    ]);
  });

  it('reports checks across fields even when other fields are wrong', () => {
    expect(
      problemsOf({
        hostPortRanges: { a: '7000-7100', b: '7100-7200', c: 'nonsense' },
        scale: { minNodes: 5, maxNodes: 2, bufferGameServers: 'ten' },
      }),
    ).toEqual([
      expect.stringMatching(/^hostPortRanges\.c: /),
      'scale.bufferGameServers: must be a number, not the string "ten"',
      expect.stringMatching(/^hostPortRanges\.b: 7100-7200 overlaps range "a"/),
      'scale.maxNodes: maxNodes must be at least minNodes (maxNodes 2, minNodes 5)',
    ]);
  });

  it('says what a value must be and what it was, in plain words', () => {
    expect(
      problemsOf({ cluster: 5, serviceCIDRs: '10.0.0.0/16', repair: { leakGracePasses: 1.5 } }),
    ).toEqual([
      'cluster: must be a string, not the number 5',
      'serviceCIDRs: must be a list, not the string "10.0.0.0/16"',
      'repair.leakGracePasses: must be a whole number, not the number 1.5',
    ]);
  });

  it('rejects a host port range inside the node port range', () => {
    expect(problemsOf({ hostPortRanges: { default: '30500-30600' } })).toEqual([
      expect.stringMatching(
        /^hostPortRanges.default: 30500-30600 overlaps nodePortRange 30000-32767/,
      ),
    ]);
  });

  it('names no counter by default, and takes an Agones Counter or List name', () => {
    expect(parseConfig({}).scale.gameState).toEqual({});
    expect(parseConfig({ scale: { gameState: { counter: 'sessions' } } }).scale.gameState).toEqual({
      counter: 'sessions',
    });
    expect(parseConfig({ scale: { gameState: { counter: 'rooms.v2' } } }).scale.gameState).toEqual({
      counter: 'rooms.v2',
    });
  });

  it("takes a session label key only beside a counter, the policy defaulting it to Agones' key", () => {
    const counted = parseConfig({ scale: { gameState: { counter: 'sessions' } } }).scale;
    expect(scalePolicy(counted).sessionLabel).toBe('agones.dev/sdk-gs-session-ready');
    expect(scalePolicy(parseConfig({}).scale).sessionLabel).toBeUndefined();
    const named = parseConfig({
      scale: { gameState: { counter: 'sessions', sessionLabel: 'agones.dev/sdk-open' } },
    }).scale;
    expect(scalePolicy(named).sessionLabel).toBe('agones.dev/sdk-open');
    expect(problemsOf({ scale: { gameState: { sessionLabel: 'agones.dev/sdk-open' } } })).toEqual([
      'scale.gameState.sessionLabel: sessionLabel needs counter: name the Counter the multi-session servers count matches in, or remove sessionLabel',
    ]);
    expect(
      problemsOf({ scale: { gameState: { counter: 'sessions', sessionLabel: 'Bad Key/x' } } }),
    ).toEqual([
      'scale.gameState.sessionLabel: must be a Kubernetes label key such as "agones.dev/sdk-gs-session-ready": an optional DNS prefix and "/", then 1-63 letters, digits, ".", "_" or "-"',
    ]);
  });

  it('rejects a counter name Agones would not match, an empty one, and unknown keys, at once', () => {
    const rule =
      'must name an Agones Counter or List as the Fleet template declares it, e.g. "sessions": 1-63 letters, digits, ".", "_" or "-", starting and ending with a letter or digit';
    expect(problemsOf({ scale: { gameState: { counter: 'my sessions' } } })).toEqual([
      `scale.gameState.counter: ${rule}`,
    ]);
    expect(problemsOf({ scale: { gameState: { counter: '', list: 'x' } } })).toEqual([
      `scale.gameState.counter: ${rule}`,
      'scale.gameState.list: unknown key; remove it or check its spelling',
    ]);
    expect(problemsOf({ scale: { gameState: { counter: 4 } } })).toEqual([
      'scale.gameState.counter: must be a string, not the number 4',
    ]);
  });
});
