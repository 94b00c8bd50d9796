import { describe, expect, it } from 'vitest';
import {
  FROM_POD_PRIORITY,
  planAdd,
  planDelete,
  type Rule,
  routingProblems,
  TO_POD_PRIORITY,
} from '../../cni/source-routing.js';

const route = { ip: '10.0.0.17', table: 1001, link: 'eth1', gateway: '10.0.0.1' };
const toRule = (ip: string): Rule => ({
  priority: TO_POD_PRIORITY,
  dst: ip,
  dstlen: 32,
  table: 'main',
});
const fromRule = (ip: string, table: string): Rule => ({
  priority: FROM_POD_PRIORITY,
  src: ip,
  srclen: 32,
  table,
});

describe('source routing for pods on berth ENIs', () => {
  it('adds the two rules and the ENI table on a fresh node', () => {
    expect(planAdd([], route)).toEqual([
      ['-4', 'route', 'replace', '10.0.0.1', 'dev', 'eth1', 'scope', 'link', 'table', '1001'],
      ['-4', 'route', 'replace', 'default', 'via', '10.0.0.1', 'dev', 'eth1', 'table', '1001'],
      ['-4', 'rule', 'add', 'to', '10.0.0.17/32', 'lookup', 'main', 'pref', '512'],
      ['-4', 'rule', 'add', 'from', '10.0.0.17/32', 'lookup', '1001', 'pref', '1536'],
    ]);
  });

  it('is idempotent: rules already there are not added twice', () => {
    const plan = planAdd([toRule(route.ip), fromRule(route.ip, '1001')], route);
    expect(plan.filter((command) => command[1] === 'rule')).toEqual([]);
  });

  it('replaces a rule an earlier holder of the address left pointing at another ENI table', () => {
    const plan = planAdd([toRule(route.ip), fromRule(route.ip, '1002')], route);
    expect(plan).toContainEqual([
      '-4',
      'rule',
      'del',
      'from',
      '10.0.0.17/32',
      'lookup',
      '1002',
      'pref',
      '1536',
    ]);
    expect(plan).toContainEqual([
      '-4',
      'rule',
      'add',
      'from',
      '10.0.0.17/32',
      'lookup',
      '1001',
      'pref',
      '1536',
    ]);
  });

  it('removes the pod’s rules on DEL and flushes the ENI table only when no other pod uses it', () => {
    const rules = [
      toRule(route.ip),
      fromRule(route.ip, '1001'),
      toRule('10.0.0.18'),
      fromRule('10.0.0.18', '1001'),
    ];
    expect(planDelete(rules, route.ip)).toEqual([
      ['-4', 'rule', 'del', 'to', '10.0.0.17/32', 'lookup', 'main', 'pref', '512'],
      ['-4', 'rule', 'del', 'from', '10.0.0.17/32', 'lookup', '1001', 'pref', '1536'],
    ]);
    expect(planDelete(rules.slice(0, 2), route.ip)).toContainEqual([
      '-4',
      'route',
      'flush',
      'table',
      '1001',
    ]);
    expect(planDelete([], route.ip)).toEqual([]);
  });

  it('lets CHECK name each missing piece', () => {
    expect(routingProblems([], [], route)).toEqual([
      'no rule "to 10.0.0.17 lookup main" at priority 512',
      'no rule "from 10.0.0.17 lookup 1001" at priority 1536',
      'table 1001 has no default route via 10.0.0.1 dev eth1',
    ]);
    const rules = [toRule(route.ip), fromRule(route.ip, '1001')];
    const routes = [{ dst: 'default', gateway: '10.0.0.1', dev: 'eth1' }];
    expect(routingProblems(rules, routes, route)).toEqual([]);
  });
});
