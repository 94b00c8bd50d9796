import { describe, expect, it } from 'vitest';
import { linkWithMac, parseRoutingView } from '../../cni/host-network.js';

describe('the node’s routing as ip reads it', () => {
  it('reads the links and the rules of one ip batch, one JSON array a line', () => {
    const view = parseRoutingView(
      '[{"ifname":"lo","address":"00:00:00:00:00:00"},{"ifname":"eni1","address":"0A:00:00:00:00:06"}]\n[{"priority":0,"src":"all","table":"local"}]\n',
    );
    expect(view.rules).toEqual([{ priority: 0, src: 'all', table: 'local' }]);
    expect(linkWithMac(view, '0a:00:00:00:00:06')).toBe('eni1');
    expect(linkWithMac(view, '0a:00:00:00:00:07')).toBeUndefined();
  });

  it('refuses what is not the two arrays, as a routing error naming what came', () => {
    for (const printed of ['', '[]\n', '[]\n[]\n[]\n']) {
      expect(() => parseRoutingView(printed)).toThrow(
        expect.objectContaining({ code: 101, message: expect.stringContaining('not the links') }),
      );
    }
  });
});
