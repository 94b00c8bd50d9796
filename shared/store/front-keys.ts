/** Sort-key parts the fronts' item families share (./dynamo-front-store.ts, ./dynamo-slot-chain-store.ts). */

/** Port numbers zero-padded, so that key order is port order. */
export const paddedPort = (port: number): string => String(port).padStart(5, '0');

/**
 * A load balancer's part of a key: `<name>/<id>` of `…:loadbalancer/net/<name>/<id>`, readable
 * and unique among the load balancers of one account and Region.
 */
export const loadBalancerKey = (arn: string): string => arn.split('/').slice(-2).join('/');

/** A Query of every sort key starting `prefix` (begins_with, as the inclusive range it is). */
export const startingWith = (prefix: string) => ({
  between: { from: prefix, to: `${prefix}\uffff` },
});
