/** Pods and Services as users write them, and what berth's store says they hold. */
import type { BerthRuntime } from '../../shared/app/runtime.js';
import { PORTS_ANNOTATION } from '../../shared/vocabulary/labels.js';

/** A game-server pod asking berth for one UDP port (`front: 'nlb'` fronts it). */
export function gamePod(
  metadata: Record<string, unknown>,
  port: Record<string, unknown> = {},
): Record<string, unknown> {
  const annotations = (metadata.annotations as Record<string, string> | undefined) ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...metadata,
      annotations: {
        [PORTS_ANNOTATION]: JSON.stringify([{ name: 'game', containerPort: 7777, ...port }]),
        ...annotations,
      },
    },
    spec: { containers: [{ name: 'server', image: 'example/game:1' }] },
  };
}

/** A Service of `type` with one port. */
export function service(metadata: Record<string, unknown>, type = 'ClusterIP') {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata,
    spec: { type, ports: [{ port: 80, protocol: 'TCP' }] },
  };
}

/** The ids of every host port record berth holds. */
export async function records(runtime: BerthRuntime): Promise<string[]> {
  const ids: string[] = [];
  for await (const record of runtime.hostPortStore.listRecords()) ids.push(record.id);
  return ids.sort();
}

/** `used` of the named range in berth's status. */
export async function rangeUse(runtime: BerthRuntime, name: string): Promise<number> {
  const status = await runtime.status();
  const range = status.ranges.find((r) => r.name === name);
  if (!range) throw new Error(`no range ${name} in ${JSON.stringify(status.ranges)}`);
  return range.used;
}
