/**
 * The webhooks' guard for nodes berth drains: a game server is refused a node berth has cordoned
 * or is removing, and nothing else is.
 */
import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { refusalForDrainingNode } from '../../shared/admission/removal-guard.js';
import { CORDONED_AT, REMOVAL_STARTED_AT } from '../../shared/scale/names.js';

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
