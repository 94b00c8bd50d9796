/**
 * The Service fields berth reads, parsed leniently: the apiserver validated the object's shape,
 * berth only needs these fields to be of the types it uses.
 */
import { z } from 'zod';

const servicePort = z.looseObject({
  name: z.string().optional(),
  port: z.number().int(),
  protocol: z.enum(['TCP', 'UDP', 'SCTP']).default('TCP'),
  nodePort: z.number().int().optional(),
});

const serviceSpec = z.looseObject({
  type: z.enum(['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName']).default('ClusterIP'),
  clusterIP: z.string().optional(),
  clusterIPs: z.array(z.string()).optional(),
  ipFamilies: z.array(z.enum(['IPv4', 'IPv6'])).optional(),
  ipFamilyPolicy: z.enum(['SingleStack', 'PreferDualStack', 'RequireDualStack']).optional(),
  ports: z.array(servicePort).default([]),
  allocateLoadBalancerNodePorts: z.boolean().optional(),
  externalTrafficPolicy: z.string().optional(),
  healthCheckNodePort: z.number().int().optional(),
});

const service = z.looseObject({
  metadata: z.looseObject({
    name: z.string().optional(),
    generateName: z.string().optional(),
    namespace: z.string().optional(),
    uid: z.string().optional(),
    resourceVersion: z.string().optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
  spec: serviceSpec.prefault({}),
});

/** A Service as berth reads it. */
export type Service = z.output<typeof service>;
/** Its spec. */
export type ServiceSpec = Service['spec'];

/** A Service whose fields berth needs have the wrong type: the path and the problem. */
export class MalformedServiceError extends Error {
  readonly statusCode = 422;
  constructor(message: string) {
    super(message);
    this.name = 'MalformedServiceError';
  }
}

/** Parses an admission object as a Service, or throws MalformedServiceError naming the field. */
export function parseService(object: unknown): Service {
  const result = service.safeParse(object);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = (issue?.path ?? [])
    .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
    .join('')
    .slice(1);
  // The whole object (absent, or no object at all) is the review's `object`.
  const field = path === '' ? 'object' : path.replace(/\.\[/g, '[');
  throw new MalformedServiceError(`${field}: ${issue?.message ?? 'invalid'}`);
}
