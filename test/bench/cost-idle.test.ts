import { describe, expect, it } from 'vitest';
import { REFERENCE_CONFIG } from '../../bench/cost/fleet.js';
import { idleGameNodes } from '../../bench/cost/meter/idle.js';
import { parseConfig } from '../../shared/config/schema.js';

describe('the idle cluster of the cost meter', () => {
  it("is one game node for the reference config: its buffer of 10 fits one node's 35 slots", () => {
    expect(idleGameNodes(parseConfig(REFERENCE_CONFIG).scale)).toBe(1);
  });

  it('keeps enough nodes for the buffer, and never fewer than minNodes', () => {
    const scale = { bufferGameServers: 80, minNodes: 1, gameServerCpuMillis: 450 };
    expect(idleGameNodes(scale)).toBe(3);
    expect(idleGameNodes({ ...scale, minNodes: 5 })).toBe(5);
    expect(idleGameNodes({ ...scale, bufferGameServers: 0, minNodes: 0 })).toBe(0);
  });
});
