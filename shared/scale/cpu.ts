/**
 * CPU quantities in millicores, read the way the kube-scheduler reads them: exact decimal
 * arithmetic (no floating point, so "0.1" is 100m and not 101m) and rounding up to a whole milli.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';

const QUANTITY =
  /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$/;

const DECIMAL_SUFFIX: Readonly<Record<string, number>> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY_SUFFIX: Readonly<Record<string, bigint>> = {
  Ki: 1n,
  Mi: 2n,
  Gi: 3n,
  Ti: 4n,
  Pi: 5n,
  Ei: 6n,
};

/** A Kubernetes quantity as whole millis, rounded up; undefined when it is not a quantity. */
export function parseMillis(text: string): number | undefined {
  const match = QUANTITY.exec(text.trim());
  if (!match) return undefined;
  const [, sign = '', number = '', exponentText, suffix = ''] = match;
  const [whole = '', fraction = ''] = number.split('.');
  let mantissa = BigInt(`${whole}${fraction}` || '0');
  let exponent = 3 - fraction.length;
  if (exponentText !== undefined) exponent += Number(exponentText.slice(1));
  const binary = BINARY_SUFFIX[suffix];
  if (binary !== undefined) mantissa *= 1024n ** binary;
  else exponent += DECIMAL_SUFFIX[suffix] ?? 0;
  let millis: bigint;
  if (exponent >= 0) {
    millis = mantissa * 10n ** BigInt(exponent);
  } else {
    const divisor = 10n ** BigInt(-exponent);
    millis = (mantissa + divisor - 1n) / divisor;
  }
  const value = Number(millis);
  if (!Number.isSafeInteger(value)) return undefined;
  return sign === '-' ? -value : value;
}

/** The CPU in a resource list (`requests`, `allocatable`), in millis; absent or bad is 0. */
export function cpuMillisOf(resources: Readonly<Record<string, string>> | undefined): number {
  const text = resources?.cpu;
  if (text === undefined) return 0;
  return Math.max(0, parseMillis(text) ?? 0);
}

const requestOf = (container: V1Container): number => cpuMillisOf(container.resources?.requests);

/**
 * A pod's effective CPU request as the scheduler computes it (`resource.PodRequests`): the larger
 * of the sum of its containers and the peak of its init sequence, where restartable init
 * containers (sidecars) keep running and so add to both; then the RuntimeClass overhead. A
 * pod-level `spec.resources.requests.cpu`, when set, replaces both.
 */
export function effectiveCpuRequestMillis(pod: V1Pod): number {
  const spec = pod.spec;
  if (!spec) return 0;
  let containers = spec.containers.reduce((sum, c) => sum + requestOf(c), 0);
  let sidecars = 0;
  let initPeak = 0;
  for (const init of spec.initContainers ?? []) {
    const request = requestOf(init);
    if (init.restartPolicy === 'Always') {
      sidecars += request;
      containers += request;
      initPeak = Math.max(initPeak, sidecars);
    } else {
      initPeak = Math.max(initPeak, request + sidecars);
    }
  }
  const overhead = cpuMillisOf(spec.overhead);
  // Pod-level resources (PodLevelResources) are the whole pod's budget when set.
  if (spec.resources?.requests?.cpu !== undefined) {
    return cpuMillisOf(spec.resources.requests) + overhead;
  }
  return Math.max(containers, initPeak) + overhead;
}
