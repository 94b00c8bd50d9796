import { describe, expect, it } from 'vitest';
import type { HostPortRange } from '../../shared/hostports/model.js';
import {
  MAX_ALLOCATED_PORTS,
  type PodContainers,
  parsePortSpecs,
} from '../../shared/hostports/spec.js';

const ranges = new Map<string, HostPortRange>([
  ['default', { name: 'default', first: 7000, size: 1001 }],
]);
const one: PodContainers = { containers: ['game'], initContainers: [] };
const p = 'metadata.annotations[berth.dev/ports]';

function problems(annotation: unknown, pod: PodContainers = one): readonly string[] {
  const result = parsePortSpecs(JSON.stringify(annotation), pod, ranges);
  return result.ok ? [] : result.problems;
}

describe('parsePortSpecs', () => {
  it('fills in the defaults: Dynamic, UDP, the only container, range default', () => {
    const result = parsePortSpecs('[{"name":"game","containerPort":7777}]', one, ranges);
    expect(result).toEqual({
      ok: true,
      specs: [
        {
          index: 0,
          name: 'game',
          container: { field: 'containers', index: 0, name: 'game' },
          portPolicy: 'Dynamic',
          protocol: 'UDP',
          containerPort: 7777,
          range: 'default',
        },
      ],
    });
  });

  it('treats 0 and null port numbers as unset, as Agones does with int32 zero values', () => {
    expect(
      problems([{ name: 'a', portPolicy: 'Passthrough', containerPort: 0, hostPort: null }]),
    ).toEqual([]);
    expect(problems([{ name: 'a', containerPort: 0 }])).toEqual([
      `${p}[0].containerPort: Required value: ContainerPort must be defined for Dynamic and Static PortPolicies`,
    ]);
  });

  it('takes a None port with or without a containerPort, as Agones does', () => {
    expect(problems([{ name: 'a', portPolicy: 'None' }])).toEqual([]);
    expect(problems([{ name: 'a', portPolicy: 'None', containerPort: 7000 }])).toEqual([]);
  });

  it('lets a sidecar init container take a port, but not a plain init container', () => {
    const pod: PodContainers = {
      containers: ['game'],
      initContainers: [
        { name: 'setup', sidecar: false },
        { name: 'relay', sidecar: true },
      ],
    };
    expect(problems([{ name: 'a', containerPort: 1, container: 'relay' }], pod)).toEqual([]);
    expect(problems([{ name: 'a', containerPort: 1, container: 'setup' }], pod)).toEqual([
      `${p}[0].container: Invalid value: "setup": init container setup is not a sidecar (restartPolicy: Always), so it cannot take a port`,
    ]);
  });

  it('asks for a container when the pod has none', () => {
    expect(
      problems([{ name: 'a', containerPort: 1 }], { containers: [], initContainers: [] }),
    ).toEqual([`${p}[0].container: Required value: the pod has no containers`]);
  });

  it('denies two Static ports on one host port and protocol, and allows them on different protocols', () => {
    const both = { portPolicy: 'Static', containerPort: 1, hostPort: 9000 };
    expect(
      problems([
        { name: 'a', ...both, protocol: 'TCP' },
        { name: 'b', ...both, protocol: 'UDP' },
      ]),
    ).toEqual([]);
    expect(
      problems([
        { name: 'a', ...both, protocol: 'TCPUDP' },
        { name: 'b', ...both, protocol: 'UDP' },
      ]),
    ).toEqual([`${p}[1].hostPort: Duplicate value: 9000: already used for UDP in this pod`]);
  });

  it(`caps a pod at ${MAX_ALLOCATED_PORTS} allocated ports, the size of one transaction`, () => {
    const specs = Array.from({ length: MAX_ALLOCATED_PORTS + 1 }, (_, i) => ({
      name: `p${i}`,
      containerPort: i + 1,
    }));
    expect(problems(specs)).toEqual([
      `${p}: Too many: ${MAX_ALLOCATED_PORTS + 1}: must have at most ${MAX_ALLOCATED_PORTS} Dynamic or Passthrough ports`,
    ]);
  });

  it('rejects wrong types with the field path', () => {
    expect(
      problems([{ name: 7, containerPort: '7777', portPolicy: 1, container: 3, range: 2 }]),
    ).toEqual([
      `${p}[0].name: Invalid value: 7: must be a string`,
      `${p}[0].portPolicy: Unsupported value: 1: supported values: "Dynamic", "Passthrough", "Static", "None"`,
      `${p}[0].container: Invalid value: 3: must be a container name`,
      `${p}[0].containerPort: Invalid value: "7777": must be between 1 and 65535, inclusive`,
      `${p}[0].range: Invalid value: 2: must be a host port range name`,
    ]);
  });
});
