/**
 * The cost meter's count of a node agent's reports: the agent's own rule over a node's day of
 * reference sessions, so a session pays a share of a report, not a call of its own.
 */
import { describe, expect, it } from 'vitest';
import { agentReportsPerNodeDay } from '../../bench/cost/meter/eni.js';
import { HEARTBEAT_MS } from '../../cni/handout/agent.js';

describe('the node agent’s reports over a reference day', () => {
  it('come at watermarks far fewer than sessions, and heartbeats at most one per interval', () => {
    const day = agentReportsPerNodeDay(48);
    expect(day.watermark).toBeGreaterThan(0);
    expect(day.watermark / day.sessions).toBeLessThan(0.5);
    expect(day.heartbeat).toBeGreaterThan(0);
    expect(day.heartbeat).toBeLessThanOrEqual(86_400_000 / HEARTBEAT_MS);
  });

  it('are fewer for a larger set, whose watermarks lie further apart', () => {
    expect(agentReportsPerNodeDay(96).watermark).toBeLessThan(agentReportsPerNodeDay(32).watermark);
  });
});
