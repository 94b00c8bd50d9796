/** Node pool failures. Each names the pool or instance and what to check. */

/** Base of every node pool failure. */
export class NodePoolError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NodePoolError';
  }
}

/** The configured Auto Scaling group or node group does not exist. */
export class PoolNotFoundError extends NodePoolError {
  readonly pool: string;
  constructor(kind: string, pool: string, options?: { cause?: unknown }) {
    super(`${kind} "${pool}" not found; check scale.nodePool.name`, options);
    this.name = 'PoolNotFoundError';
    this.pool = pool;
  }
}

/** A node whose `spec.providerID` names no EC2 instance, so its instance cannot be released. */
export class InstanceIdUnknownError extends NodePoolError {
  readonly node: string;
  constructor(node: string, providerId: string | undefined) {
    super(
      `node ${node}: spec.providerID ${providerId === undefined ? 'is missing' : `"${providerId}" is not aws:///<zone>/<instance-id>`}; its instance cannot be released`,
    );
    this.name = 'InstanceIdUnknownError';
    this.node = node;
  }
}

/** The node's instance belongs to another Auto Scaling group than the configured pool. */
export class InstanceOutsidePoolError extends NodePoolError {
  readonly instanceId: string;
  readonly group: string;
  constructor(instanceId: string, group: string, pool: string) {
    super(
      `instance ${instanceId} belongs to Auto Scaling group "${group}", not to the node pool "${pool}"; check scale.nodeSelector`,
    );
    this.name = 'InstanceOutsidePoolError';
    this.instanceId = instanceId;
    this.group = group;
  }
}
