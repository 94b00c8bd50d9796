import { describe, expect, it } from 'vitest';
import { nodeCallerCheck } from '../../shared/clusters/node-callers.js';
import type { NodeCallers } from '../../shared/config/load.js';

/** The check as the node IP function builds it once, asked once. */
const mayCallCluster = (
  callers: NodeCallers | undefined,
  cluster: string,
  caller: string | undefined,
) => nodeCallerCheck(callers)(cluster, caller);

const ROLE_A = 'arn:aws:iam::111122223333:role/nodes/games-a-nodes';
const ROLE_B = 'arn:aws:iam::111122223333:role/games-b-nodes';
const OPS = 'arn:aws:iam::111122223333:role/ops';
const assumed = (name: string, account = '111122223333') =>
  `arn:aws:sts::${account}:assumed-role/${name}/i-0123456789abcdef0`;

describe('nodeCallerCheck', () => {
  const callers = { 'games-a': [ROLE_A], 'games-b': [ROLE_B], '*': [OPS] };

  it("lets a cluster's node role call that cluster only, and a role listed for all call every one", () => {
    expect(mayCallCluster(callers, 'games-a', assumed('games-a-nodes'))).toBe(true);
    expect(mayCallCluster(callers, 'games-b', assumed('games-a-nodes'))).toBe(false);
    expect(mayCallCluster(callers, 'games-b', assumed('games-b-nodes'))).toBe(true);
    expect(mayCallCluster(callers, 'games-a', assumed('ops'))).toBe(true);
    expect(mayCallCluster(callers, 'games-b', assumed('ops'))).toBe(true);
  });

  it('refuses another account, a user, and a request with no caller', () => {
    expect(mayCallCluster(callers, 'games-a', assumed('games-a-nodes', '444455556666'))).toBe(
      false,
    );
    expect(mayCallCluster(callers, 'games-a', 'arn:aws:iam::111122223333:user/alice')).toBe(false);
    expect(mayCallCluster(callers, 'games-a', undefined)).toBe(false);
  });

  it('leaves the decision to IAM where the stack lists no callers per cluster', () => {
    expect(mayCallCluster(undefined, 'games', undefined)).toBe(true);
  });
});
