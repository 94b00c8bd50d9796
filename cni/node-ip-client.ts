/**
 * berth's node IP API as the plugin calls it: assign (`POST`), look up (`GET`) and release
 * (`DELETE`) for one holder, each within the invocation's deadline.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { type NodeReport, type NodeSet, parseNodeSet } from '../shared/eni/handout/wire.js';
import type { PodRef } from './environment.js';
import { CNI_ERROR, CniError, shown } from './errors.js';
import { instanceIdentity } from './imds.js';
import type { BerthIpamConfig } from './netconf.js';

/** A request before it goes out: signing may add headers. */
interface OutgoingRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly url: URL;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

/** Adds authentication to a request. */
export type Signer = (request: OutgoingRequest, signal: AbortSignal) => Promise<OutgoingRequest>;

/**
 * The release's answer: whether this holder's address was freed now. `refused`: berth refused the holder or the address as malformed, so none of
 * it can have been set up by berth, and nothing of the node's (its routing) is this DEL's to undo.
 */
export type ReleaseOutcome = 'released' | 'already-free' | 'held-by-another' | 'refused';

/** What the plugin and the agent ask of berth's node API. */
export type NodeApi = Pick<NodeIpClient, 'assign' | 'lookUp' | 'release' | 'nodeSet' | 'report'>;

/** The node IP API for one node. */
export class NodeIpClient {
  readonly #config: BerthIpamConfig;
  readonly #signal: AbortSignal;
  readonly #sign: Signer;

  constructor(
    config: BerthIpamConfig,
    signal: AbortSignal,
    sign: Signer = config.auth.kind === 'sigv4' ? sigv4Signer(config.auth.region) : unsigned,
  ) {
    this.#config = config;
    this.#signal = signal;
    this.#sign = sign;
  }

  /**
   * The holder's address, the one it has or a new one, as berth answered it: unchecked
   * (`checkedAssignment` in answer.ts reads it).
   */
  async assign(pod: PodRef): Promise<unknown> {
    const { status, body } = await this.#send('POST', '', {
      namespace: pod.namespace,
      pod: pod.name,
      containerId: pod.containerId,
    });
    if (status === 200) return body;
    throw refused("assign the pod's address", status, body);
  }

  /** The holder's address, read only and unchecked as `assign`'s; undefined when it has none. */
  async lookUp(pod: PodRef): Promise<unknown> {
    const { status, body } = await this.#send('GET', `?${holderQuery(pod)}`);
    if (status === 200) return body;
    // None, or a holder berth could never have given one (a name it refuses as malformed).
    if (status === 404 || status === 400) return undefined;
    throw refused("look up the pod's address", status, body);
  }

  /** Frees `ip` only while this holder has it. */
  async release(ip: string, pod: PodRef): Promise<ReleaseOutcome> {
    const { status, body } = await this.#send(
      'DELETE',
      `/${encodeURIComponent(ip)}?${holderQuery(pod)}`,
    );
    if (status === 200)
      return (body as { released?: boolean }).released ? 'released' : 'already-free';
    if (status === 400) return 'refused';
    if (status === 409) return 'held-by-another';
    throw refused("release the pod's address", status, body);
  }

  /** The node's set (`GET /v1/nodes/{node}/addresses`): from now on the node hands it out. */
  async nodeSet(): Promise<NodeSet> {
    const { status, body } = await this.#send('GET', '', undefined, 'addresses');
    return setIn('learn', status, body);
  }

  /** Sends the node's report of its use (and returns, and a refill) and answers its set. */
  async report(report: NodeReport): Promise<NodeSet> {
    const { status, body } = await this.#send('POST', '', report, 'addresses');
    return setIn('report', status, body);
  }

  async #send(
    method: OutgoingRequest['method'],
    suffix: string,
    json?: unknown,
    route: 'ips' | 'addresses' = 'ips',
  ): Promise<{ status: number; body: unknown }> {
    const url = new URL(
      `${this.#config.endpoint}/v1/nodes/${encodeURIComponent(this.#config.node)}/${route}${suffix}`,
    );
    const unsigned: OutgoingRequest = {
      method,
      url,
      headers: json === undefined ? {} : { 'content-type': 'application/json' },
      ...(json === undefined ? {} : { body: JSON.stringify(json) }),
    };
    let response: Response;
    try {
      const request = await this.#sign(unsigned, this.#signal);
      response = await fetch(request.url, {
        method: request.method,
        headers: request.headers,
        ...(request.body === undefined ? {} : { body: request.body }),
        signal: this.#signal,
      });
    } catch (error) {
      const why = this.#signal.aborted
        ? `no answer within ${this.#config.timeoutMs / 1000} s`
        : error instanceof Error
          ? ((error.cause as Error | undefined)?.message ?? error.message)
          : String(error);
      throw new CniError(
        CNI_ERROR.tryAgainLater,
        `berth at ${this.#config.endpoint} did not answer: ${why}`,
        `${method} ${url.pathname}`,
      );
    }
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // A proxy's HTML or an empty body: reported as text.
    }
    return { status: response.status, body };
  }
}

/** The set in an answer; a refusal, or an answer that is not a set, as a CNI error. */
function setIn(what: 'learn' | 'report', status: number, body: unknown): NodeSet {
  if (status !== 200) throw refused(`${what} the node's addresses`, status, body);
  const set = parseNodeSet(body);
  if (set === undefined) {
    throw new CniError(CNI_ERROR.internal, `berth answered no node set: ${textOf(body)}`);
  }
  return set;
}

function holderQuery(pod: PodRef): string {
  return new URLSearchParams({
    namespace: pod.namespace,
    pod: pod.name,
    containerId: pod.containerId,
  }).toString();
}

/**
 * A refusal as a CNI error: 429 (the pod's own requests raced for its address, `Retry-After`
 * says when to come again), 503 and any 5xx are worth kubelet's retry; the rest are berth's
 * answer.
 */
function refused(what: string, status: number, body: unknown): CniError {
  const message =
    typeof body === 'object' && body !== null && 'error' in body
      ? textOf((body as { error: unknown }).error)
      : textOf(body);
  return new CniError(
    status === 429 || status >= 500 ? CNI_ERROR.tryAgainLater : CNI_ERROR.refused,
    `berth refused to ${what} (HTTP ${status}): ${message}`,
  );
}

/** What berth said: its text as it is, anything else as JSON; never `[object Object]`. */
function textOf(said: unknown): string {
  return typeof said === 'string' ? said.slice(0, 200) : shown(said);
}

/** Plain requests: the local server. */
const unsigned: Signer = async (request) => request;

/**
 * SigV4 for the stack's AWS_IAM function URL (service `lambda`), with the instance role's
 * credentials and region from the instance metadata service at `imds`.
 */
export function sigv4Signer(region: string | undefined, imds?: string): Signer {
  return async (request, signal) => {
    const identity = await instanceIdentity(signal, imds).catch((error: unknown) => {
      throw new CniError(
        CNI_ERROR.tryAgainLater,
        `cannot sign for berth: ${error instanceof Error ? error.message : String(error)}`,
      );
    });
    const signer = new SignatureV4({
      service: 'lambda',
      region: region ?? identity.region,
      credentials: identity.credentials,
      sha256: Sha256,
    });
    const query = Object.fromEntries(request.url.searchParams);
    const signed = await signer.sign(
      new HttpRequest({
        method: request.method,
        protocol: request.url.protocol,
        hostname: request.url.hostname,
        path: request.url.pathname,
        query,
        headers: { ...request.headers, host: request.url.host },
        ...(request.body === undefined ? {} : { body: request.body }),
      }),
    );
    return { ...request, headers: signed.headers as Record<string, string> };
  };
}
