/**
 * The fronted ports of a stored pod, read back from the annotations berth wrote at its CREATE
 * (`berth.dev/ports` for the front and protocol, `berth.dev/host-ports` for the host port). Read
 * leniently: a pod whose annotations were changed since is taken for what it still says, and an
 * entry that no longer reads is no fronted port. Pure.
 */
import { PORT_PROTOCOLS, type PortProtocol } from '../hostports/model.js';
import {
  FRONTS_ANNOTATION,
  HOST_PORTS_ANNOTATION,
  PORTS_ANNOTATION,
} from '../vocabulary/labels.js';
import { annotationOf, ownValueOf } from '../vocabulary/opaque.js';
import { FRONT_KINDS, type FrontKind } from './model.js';
import type { FrontedPortWork } from './work.js';

type JsonObject = Readonly<Record<string, unknown>>;

function parsed(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * The pod's ports that asked for a front, with the host port each was given: from `held`, the
 * ports berth recorded for its allocation, when given (an annotation anyone can edit must not
 * name another game server's host port), else from `berth.dev/host-ports`.
 */
export function frontedPortsOf(
  pod: JsonObject,
  held?: readonly { readonly name: string; readonly port: number }[],
): FrontedPortWork[] {
  const specs = parsed(annotationOf(pod, PORTS_ANNOTATION));
  const hostPorts =
    held === undefined
      ? parsed(annotationOf(pod, HOST_PORTS_ANNOTATION))
      : Object.fromEntries(held.map((port) => [port.name, port.port]));
  if (!Array.isArray(specs) || typeof hostPorts !== 'object' || hostPorts === null) return [];
  const ports: FrontedPortWork[] = [];
  for (const entry of specs) {
    if (typeof entry !== 'object' || entry === null) continue;
    const { name, front, protocol } = entry as Record<string, unknown>;
    if (typeof name !== 'string' || !(FRONT_KINDS as readonly unknown[]).includes(front)) continue;
    const hostPort = ownValueOf(hostPorts as Record<string, unknown>, name);
    if (typeof hostPort !== 'number') continue;
    const known = (PORT_PROTOCOLS as readonly unknown[]).includes(protocol);
    ports.push({
      name,
      front: front as FrontKind,
      protocol: known ? (protocol as PortProtocol) : 'UDP',
      hostPort,
    });
  }
  return ports;
}

/** The addresses the pod was told (`berth.dev/fronts`), port name → `host:port`; none if unreadable. */
export function toldFronts(pod: JsonObject): Record<string, string> {
  const told = parsed(annotationOf(pod, FRONTS_ANNOTATION));
  if (typeof told !== 'object' || told === null || Array.isArray(told)) return {};
  return Object.fromEntries(
    Object.entries(told as Record<string, unknown>).filter(
      (entry): entry is [string, string] => typeof entry[1] === 'string',
    ),
  );
}
