/**
 * The webhooks' guard for nodes berth drains: a game server is refused a node berth has cordoned
 * or is removing, and nothing else is.
 */
import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { nodeForGameServer, refusalForDrainingNode } from '../../shared/admission/removal-guard.js';
import { CORDONED_AT, REMOVAL_STARTED_AT } from '../../shared/vocabulary/labels.js';

const AT = '2026-11-26T03:00:00Z';
const nodeWith = (unschedulable: boolean, annotations: Record<string, string>): V1Node => ({
  metadata: { name: 'n1', annotations },
  spec: { unschedulable },
});
const refusal = (node: V1Node | undefined) =>
  refusalForDrainingNode(node, 'n1', 'games/gs-1', 'target.name');

describe('refusalForDrainingNode', () => {
  it('refuses a node berth cordoned, from the cordon on, and one it is removing', () => {
    expect(refusal(nodeWith(true, { [CORDONED_AT]: AT }))).toMatchObject({
      allowed: false,
      code: 409,
      message: `target.name: node n1 is cordoned by berth to drain (${CORDONED_AT}: ${AT}); game server games/gs-1 may not be placed on it, choose another node`,
    });
    expect(refusal(nodeWith(true, { [CORDONED_AT]: AT, [REMOVAL_STARTED_AT]: AT }))).toMatchObject({
      allowed: false,
      message: expect.stringMatching(/is being removed by berth/),
    });
  });

  it('lets through a node someone else cordoned, one uncordoned since, and one it cannot find', () => {
    expect(refusal(nodeWith(true, {}))).toBeUndefined();
    expect(refusal(nodeWith(false, { [CORDONED_AT]: AT }))).toBeUndefined();
    expect(refusal(nodeWith(false, {}))).toBeUndefined();
    expect(refusal(undefined)).toBeUndefined();
  });
});

describe('nodeForGameServer', () => {
  const reader = (node: V1Node, reads: string[], name: string) => ({
    getNode: async () => {
      reads.push(name);
      return node;
    },
  });

  it('refuses on the node as it is now, reading past the cache only when the cache shows it draining', async () => {
    const draining = nodeWith(true, { [CORDONED_AT]: AT });
    const uncordoned = nodeWith(false, {});
    const reads: string[] = [];
    const lifted = await nodeForGameServer(
      { cached: reader(draining, reads, 'cached'), current: reader(uncordoned, reads, 'current') },
      'n1',
      'games/gs-1',
      'spec.nodeName',
    );
    expect(lifted).toEqual({ node: uncordoned });
    expect(reads).toEqual(['cached', 'current']);
    const still = await nodeForGameServer(
      { cached: reader(draining, [], 'cached'), current: reader(draining, [], 'current') },
      'n1',
      'games/gs-1',
      'spec.nodeName',
    );
    expect(still.refused?.allowed).toBe(false);
    const quiet: string[] = [];
    await nodeForGameServer(
      {
        cached: reader(uncordoned, quiet, 'cached'),
        current: reader(uncordoned, quiet, 'current'),
      },
      'n1',
      'games/gs-1',
      'target.name',
    );
    expect(quiet).toEqual(['cached']);
  });
});
