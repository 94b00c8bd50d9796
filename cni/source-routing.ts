/**
 * Source routing for pods on berth's ENIs, as the VPC CNI sets it up for pods on secondary ENIs:
 * - `to <pod IP> lookup main` (priority 512): traffic for the pod, from anywhere on the node,
 *   takes the main table, where the main plugin routed the pod's address to its link;
 * - `from <pod IP> lookup <table of the ENI>` (priority 1536): the pod's own traffic leaves
 *   through the ENI that owns its address, since the VPC drops what leaves through another;
 * - the ENI's table: its subnet's router on the link, and the default route through it.
 * Pure: it plans `ip` invocations from what `ip -j rule` lists; `host-network.ts` runs them.
 */

/** Priority of the rule that sends traffic for a pod to the main table (the VPC CNI's). */
export const TO_POD_PRIORITY = 512;
/** Priority of the rule that sends a pod's traffic to its ENI's table (the VPC CNI's). */
export const FROM_POD_PRIORITY = 1536;

/** Where one pod's traffic goes. */
export interface PodRoute {
  readonly ip: string;
  /** The route table of the pod's ENI. */
  readonly table: number;
  /** The ENI's link on the node. */
  readonly link: string;
  /** The VPC router of the ENI's subnet. */
  readonly gateway: string;
}

/** A policy rule as `ip -j -4 rule show` lists it. */
export interface Rule {
  readonly priority: number;
  readonly src?: string;
  readonly srclen?: number;
  readonly dst?: string;
  readonly dstlen?: number;
  readonly table?: string;
}

/** A route as `ip -j -4 route show table N` lists it. */
export interface Route {
  readonly dst: string;
  readonly gateway?: string;
  readonly dev?: string;
}

/** Arguments of one `ip` invocation. */
export type IpCommand = readonly string[];

const isToPod = (rule: Rule, ip: string) =>
  rule.priority === TO_POD_PRIORITY && rule.dst === ip && rule.table === 'main';
const isFromPod = (rule: Rule, ip: string) =>
  rule.priority === FROM_POD_PRIORITY && rule.src === ip;

/** What ADD runs: the pod's two rules (unless present) and its ENI's table (replaced as is). */
export function planAdd(rules: readonly Rule[], route: PodRoute): IpCommand[] {
  const table = String(route.table);
  const commands: IpCommand[] = [
    ['-4', 'route', 'replace', route.gateway, 'dev', route.link, 'scope', 'link', 'table', table],
    ['-4', 'route', 'replace', 'default', 'via', route.gateway, 'dev', route.link, 'table', table],
  ];
  if (!rules.some((rule) => isToPod(rule, route.ip))) {
    commands.push([
      '-4',
      'rule',
      'add',
      'to',
      `${route.ip}/32`,
      'lookup',
      'main',
      'pref',
      String(TO_POD_PRIORITY),
    ]);
  }
  const from = rules.filter((rule) => isFromPod(rule, route.ip));
  // A rule left by an earlier holder of this address on another table would misroute the pod.
  for (const stale of from.filter((rule) => rule.table !== table)) {
    commands.push(deleteFrom(route.ip, stale.table));
  }
  if (!from.some((rule) => rule.table === table)) {
    commands.push([
      '-4',
      'rule',
      'add',
      'from',
      `${route.ip}/32`,
      'lookup',
      table,
      'pref',
      String(FROM_POD_PRIORITY),
    ]);
  }
  return commands;
}

/**
 * What DEL runs: the pod's rules go, and an ENI table that no pod's rule points at any more is
 * flushed, so the node keeps nothing of a pod that left.
 */
export function planDelete(rules: readonly Rule[], ip: string): IpCommand[] {
  const commands: IpCommand[] = [];
  if (rules.some((rule) => isToPod(rule, ip))) {
    commands.push([
      '-4',
      'rule',
      'del',
      'to',
      `${ip}/32`,
      'lookup',
      'main',
      'pref',
      String(TO_POD_PRIORITY),
    ]);
  }
  const mine = rules.filter((rule) => isFromPod(rule, ip));
  for (const rule of mine) commands.push(deleteFrom(ip, rule.table));
  const stillUsed = new Set(
    rules
      .filter((rule) => rule.priority === FROM_POD_PRIORITY && rule.src !== ip)
      .map((rule) => rule.table),
  );
  for (const table of new Set(mine.map((rule) => rule.table))) {
    if (table !== undefined && !stillUsed.has(table)) {
      commands.push(['-4', 'route', 'flush', 'table', table]);
    }
  }
  return commands;
}

/** What CHECK finds wrong with a pod's routing; empty when it is as ADD left it. */
export function routingProblems(
  rules: readonly Rule[],
  routes: readonly Route[],
  route: PodRoute,
): string[] {
  const problems: string[] = [];
  const table = String(route.table);
  if (!rules.some((rule) => isToPod(rule, route.ip))) {
    problems.push(`no rule "to ${route.ip} lookup main" at priority ${TO_POD_PRIORITY}`);
  }
  if (!rules.some((rule) => isFromPod(rule, route.ip) && rule.table === table)) {
    problems.push(`no rule "from ${route.ip} lookup ${table}" at priority ${FROM_POD_PRIORITY}`);
  }
  const viaGateway = routes.some(
    (r) => r.dst === 'default' && r.gateway === route.gateway && r.dev === route.link,
  );
  if (!viaGateway) {
    problems.push(`table ${table} has no default route via ${route.gateway} dev ${route.link}`);
  }
  return problems;
}

function deleteFrom(ip: string, table: string | undefined): IpCommand {
  return [
    '-4',
    'rule',
    'del',
    'from',
    `${ip}/32`,
    ...(table === undefined ? [] : ['lookup', table]),
    'pref',
    String(FROM_POD_PRIORITY),
  ];
}
