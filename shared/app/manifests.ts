/**
 * `berth manifests` (cli/manifests.ts runs it): prints the MutatingWebhookConfiguration and RBAC a cluster needs, for one of
 * three endpoints, named explicitly (a webhook with `failurePolicy: Fail` pointed at the wrong
 * place blocks every Service change in a cluster, so there is no default):
 * - `--local`: the local server, `https://127.0.0.1:<port>/admission` (or the address given by
 *   `--advertise-address`), trusting the CA under `<data-dir>/tls/` (made now if `berth serve`
 *   has not made it yet, exactly as serve would);
 * - `--url URL`: any HTTPS endpoint, e.g. the stack's WebhookBaseUrl followed by the secret;
 *   `--ca-file FILE` adds a private CA, otherwise public roots apply (Lambda function URLs);
 * - `--stack NAME`: a deployed stack, whose outputs name the base URL and the secret; for a
 *   stack of several clusters, the cluster's own path and secret (`--config FILE --cluster NAME`,
 *   the config it was deployed from).
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { clusterPathPrefix } from '../clusters/http-routes.js';
import type { BerthConfig } from '../config/schema.js';
import { ensureLocalTls } from '../local/tls.js';
import { type CniTarget, cniManifests, vpcCniPatchNote } from '../manifests/cni.js';
import { WebhookEndpointError } from '../manifests/errors.js';
import { berthManifests, berthManifestsToDelete } from '../manifests/manifests.js';
import { printManifests } from '../manifests/print.js';
import { STACK_OUTPUTS } from '../manifests/stack-outputs.js';
import {
  FAIL_OPEN_CHOICES,
  type FailOpen,
  localWebhookUrl,
  securedWebhookUrl,
  type WebhookEndpoint,
  webhookUrl,
} from '../manifests/webhooks.js';
import { parseIp } from '../net/ip.js';
import { autoModeComputeOf } from '../node-pool/auto-mode.js';
import { ownValueOf } from '../vocabulary/opaque.js';
import { describeFailure, exitCodeOf } from './local-errors.js';

/** The command-line options `berth manifests` reads (a subset of the CLI's, plus `--ca-file`). */
export interface ManifestsOptions {
  readonly config: BerthConfig;
  readonly dataDir: string;
  readonly port: number;
  readonly http: boolean;
  readonly json: boolean;
  readonly url?: string;
  readonly stack?: string;
  readonly caFile?: string;
  /** `--local`: the local server. */
  readonly local?: boolean;
  /** The address a cluster reaches the local server at. */
  readonly advertiseAddress?: string;
  /** `--new-ca`: make a new local CA, which every `caBundle` already applied stops matching. */
  readonly newCa?: boolean;
  /** Every cluster the config names: with several, the local server serves this one under `/clusters/<name>`. */
  readonly configuredClusters?: readonly string[];
  /** berth-cni's DaemonSet instead of the webhook. */
  readonly cni?: boolean;
  readonly cniNodes?: string;
  /** `--fail-open pods`. */
  readonly failOpen?: string;
  /** `--delete`: the objects to delete, by name, webhooks first. */
  readonly delete?: boolean;
}

/** Reads a CloudFormation stack's outputs by name (DescribeStacks). */
export interface StackOutputReader {
  outputs(stackName: string): Promise<Readonly<Record<string, string>>>;
}

/** Reads a secret's string value by ARN. */
export interface SecretReader {
  secretString(secretArn: string): Promise<string>;
}

/** What the command talks to; tests pass fakes. */
export interface ManifestsDeps {
  /** Absent until the CLI ships a CloudFormation client; `--stack` then explains the way round. */
  readonly stacks?: StackOutputReader;
  readonly secrets: SecretReader;
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /**
   * Makes or reuses the local TLS material under a directory, valid for `host`, with a new CA only
   * when `newCa`; the CA's PEM.
   */
  readonly localCa: (tlsDir: string, host: string, newCa: boolean) => Promise<string>;
}

async function readCaFile(path: string): Promise<string> {
  let pem: string;
  try {
    pem = await readFile(path, 'utf8');
  } catch (error) {
    throw new WebhookEndpointError(
      `--ca-file ${path}: cannot read it (${(error as Error).message})`,
      {
        cause: error,
      },
    );
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new WebhookEndpointError(
      `--ca-file ${path}: not a PEM certificate (no BEGIN CERTIFICATE line)`,
    );
  }
  return pem;
}

/**
 * Where a cluster's routes are below a stack's function URLs: nothing for a single-cluster stack,
 * `clusters/<name>/` for a stack of several, which must serve `cluster`. Returns that prefix and
 * the cluster's secret ARN where the stack has one per cluster.
 */
function stackCluster(
  stack: string,
  outputs: Readonly<Record<string, string>>,
  cluster: string,
): { readonly prefix: string; readonly secretArn?: string } {
  const text = outputs[STACK_OUTPUTS.webhookSecretArns];
  if (text === undefined) return { prefix: '' };
  let byCluster: Record<string, string>;
  try {
    byCluster = JSON.parse(text) as Record<string, string>;
  } catch {
    throw new WebhookEndpointError(
      `--stack ${stack}: output ${STACK_OUTPUTS.webhookSecretArns} is not JSON; is it a berth stack?`,
    );
  }
  const secretArn = ownValueOf(byCluster, cluster);
  if (secretArn === undefined) {
    throw new WebhookEndpointError(
      `--stack ${stack}: serves clusters ${Object.keys(byCluster).join(', ')}, not "${cluster}"; pass --config FILE --cluster NAME with the config it was deployed from`,
    );
  }
  // Relative to the function URL, which ends in '/'.
  return { prefix: `${clusterPathPrefix(cluster).slice(1)}/`, secretArn };
}

async function stackEndpoint(
  stack: string,
  cluster: string,
  deps: ManifestsDeps,
): Promise<WebhookEndpoint> {
  if (!deps.stacks) {
    throw new WebhookEndpointError(
      `--stack ${stack}: this build cannot read CloudFormation outputs; pass --url with the stack's ` +
        `${STACK_OUTPUTS.webhookBaseUrl} output followed by the value of its ${STACK_OUTPUTS.webhookSecretArn} secret`,
    );
  }
  const outputs = await deps.stacks.outputs(stack);
  const served = stackCluster(stack, outputs, cluster);
  const functionUrl = outputs[STACK_OUTPUTS.webhookUrl];
  if (served.secretArn !== undefined && functionUrl !== undefined) {
    const base = `${functionUrl.replace(/\/+$/, '')}/${served.prefix}admission/`;
    return { url: securedWebhookUrl(base, await deps.secrets.secretString(served.secretArn)) };
  }
  const baseUrl = outputs[STACK_OUTPUTS.webhookBaseUrl];
  const secretArn = outputs[STACK_OUTPUTS.webhookSecretArn];
  if (!baseUrl || !secretArn) {
    throw new WebhookEndpointError(
      `--stack ${stack}: outputs ${STACK_OUTPUTS.webhookBaseUrl} and ${STACK_OUTPUTS.webhookSecretArn} not found; is it a berth stack?`,
    );
  }
  return { url: securedWebhookUrl(baseUrl, await deps.secrets.secretString(secretArn)) };
}

async function endpointFor(
  options: ManifestsOptions,
  deps: ManifestsDeps,
): Promise<WebhookEndpoint> {
  const targets = [
    options.stack === undefined ? [] : ['--stack'],
    options.url === undefined ? [] : ['--url'],
    options.local ? ['--local'] : [],
  ].flat();
  if (targets.length === 0) {
    throw new WebhookEndpointError(
      "no target: pass --stack NAME (a deployed berth stack), --url URL (any HTTPS endpoint) or --local (this machine's berth serve); nothing is printed without one, because a webhook pointed at the wrong place blocks every Service change in the cluster",
    );
  }
  if (targets.length > 1) {
    throw new WebhookEndpointError(`give one target, not ${targets.join(' and ')}`);
  }
  const caPem = options.caFile === undefined ? undefined : await readCaFile(options.caFile);
  if (options.stack !== undefined) {
    const endpoint = await stackEndpoint(options.stack, options.config.cluster, deps);
    return caPem === undefined ? endpoint : { ...endpoint, caPem };
  }
  if (options.url !== undefined) {
    const url = webhookUrl(admissionPath(options.url, deps));
    return caPem === undefined ? { url } : { url, caPem };
  }
  if (options.http) {
    throw new WebhookEndpointError(
      'the apiserver calls webhooks over HTTPS only: drop --http (berth serve uses TLS by default) or pass --url',
    );
  }
  const host = localHost(options, deps);
  return {
    url: localWebhookUrl(options.port, host, localPrefix(options)),
    caPem:
      caPem ??
      (await deps.localCa(join(resolve(options.dataDir), 'tls'), host, options.newCa === true)),
  };
}

/**
 * `--url` as berth serves it: a URL with no path gets `/admission` (said on stderr); a path that
 * does not name the admission route is kept, with a warning, since a proxy may map it.
 */
function admissionPath(text: string, deps: ManifestsDeps): string {
  if (!URL.canParse(text)) return text;
  const url = new URL(text);
  if (url.pathname === '/' && !url.search && !url.hash) {
    const fixed = `${text.replace(/\/+$/, '')}/admission`;
    deps.stderr(
      `berth manifests: --url ${text} has no path; using ${fixed}, where berth serves its webhook\n`,
    );
    return fixed;
  }
  if (!/\/admission(\/[^/]+)?\/?$/.test(url.pathname)) {
    deps.stderr(
      `berth manifests: warning: --url ${text} does not end in /admission (AWS: /admission/<secret>), where berth serves its webhook; the apiserver will call exactly this URL\n`,
    );
  }
  return text;
}

/** `--fail-open`'s value checked: only pods may fail open. */
function failOpenOf(text: string | undefined): readonly FailOpen[] {
  if (text === undefined) return [];
  const choices = text.split(',').map((part) => part.trim());
  const wrong = choices.filter(
    (choice) => !(FAIL_OPEN_CHOICES as readonly string[]).includes(choice),
  );
  if (wrong.length > 0) {
    throw new WebhookEndpointError(
      `--fail-open: "${wrong.join(',')}" cannot fail open; only pods can (Services stay Fail: two Services must never share an IP or node port)`,
    );
  }
  return choices as FailOpen[];
}

/** Where the local server serves the cluster: below `/clusters/<name>` when it serves several. */
function localPrefix(options: ManifestsOptions): string {
  return (options.configuredClusters?.length ?? 1) > 1
    ? clusterPathPrefix(options.config.cluster)
    : '';
}

/** Where nodes reach the node IP API: the stack's AWS_IAM URL, any URL, or the local server. */
async function cniTargetFor(options: ManifestsOptions, deps: ManifestsDeps): Promise<CniTarget> {
  const nodeSelector = options.cniNodes ?? options.config.scale.nodeSelector;
  const targets = [
    options.stack === undefined ? [] : ['--stack'],
    options.url === undefined ? [] : ['--url'],
    options.local ? ['--local'] : [],
  ].flat();
  if (targets.length !== 1) {
    throw new WebhookEndpointError(
      targets.length === 0
        ? 'no target for --cni: pass --stack NAME (its NodeIpsUrl, SigV4), --url URL (a node IP API) or --local (berth serve on --advertise-address)'
        : `give one target, not ${targets.join(' and ')}`,
    );
  }
  if (options.stack !== undefined) {
    if (!deps.stacks)
      throw new WebhookEndpointError(
        `--stack ${options.stack}: pass --url with its ${STACK_OUTPUTS.nodeIpsUrl} output`,
      );
    const outputs = await deps.stacks.outputs(options.stack);
    const url = outputs[STACK_OUTPUTS.nodeIpsUrl];
    if (!url) {
      throw new WebhookEndpointError(
        `--stack ${options.stack}: output ${STACK_OUTPUTS.nodeIpsUrl} not found; is it a berth stack?`,
      );
    }
    const { prefix } = stackCluster(options.stack, outputs, options.config.cluster);
    const endpoint = `${url.replace(/\/+$/, '')}/${prefix}`.replace(/\/+$/, '');
    return { endpoint, auth: 'sigv4', nodeSelector };
  }
  if (options.url !== undefined) {
    let url: URL;
    try {
      url = new URL(options.url);
    } catch {
      throw new WebhookEndpointError(`--url ${options.url}: not a URL`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new WebhookEndpointError(`--url ${options.url}: must be http:// or https://`);
    }
    // A Lambda function URL is the stack's AWS_IAM one; anything else is taken as plain.
    const auth = url.hostname.endsWith('.on.aws') ? 'sigv4' : 'none';
    return { endpoint: options.url.replace(/\/+$/, ''), auth, nodeSelector };
  }
  const host = localHost(options, deps);
  const endpoint = `${options.http ? 'http' : 'https'}://${bracketed(host)}:${options.port}${localPrefix(options)}`;
  // HTTPS, as berth serve serves by default: the plugin trusts the local CA it is signed by.
  if (options.http) return { endpoint, auth: 'none', nodeSelector };
  const caPem = await deps.localCa(
    join(resolve(options.dataDir), 'tls'),
    host,
    options.newCa === true,
  );
  return { endpoint, auth: 'none', nodeSelector, caPem };
}

/** An IPv6 address in brackets, as a URL's host needs it. */
function bracketed(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * Where a cluster reaches the local server (`--advertise-address`, else 127.0.0.1), with a
 * warning on stderr when it is a loopback address: the nodes (kind's and minikube's included,
 * each a machine or container of its own) reach none of this machine's loopback.
 */
function localHost(options: ManifestsOptions, deps: ManifestsDeps): string {
  const host = options.advertiseAddress ?? '127.0.0.1';
  if (isLoopback(host)) {
    deps.stderr(
      `berth manifests: warning: ${host} is this machine's loopback address, which a cluster's nodes and apiserver cannot reach (kind and minikube run theirs in containers or VMs): pass --advertise-address ADDR, an address of this machine they reach (and start berth serve with the same --advertise-address), or --url URL\n`,
    );
  }
  return host;
}

/** 127.0.0.0/8, ::1 and `localhost` (RFC 6890's loopback blocks; RFC 6761 for the name). */
function isLoopback(host: string): boolean {
  const ip = parseIp(host);
  if (ip === undefined) return host === 'localhost' || host.endsWith('.localhost');
  return ip.family === 'IPv4' ? ip.value >> 24n === 127n : ip.value === 1n;
}

/** berth-cni as the DaemonSet's ConfigMap carries it: the bundled plugin and its wrapper. */
export interface CniPlugin {
  /** File name → text: the entry (`berth-cni.mjs`) and the chunks it loads. */
  readonly bundle: Readonly<Record<string, string>>;
  readonly wrapper: string;
}

/**
 * Builds the command over its collaborators; `cniPlugin` bundles berth-cni, only for `--cni`
 * (the bundler is the entry point's: cni/ lies above this layer).
 */
export function manifestsCommandOf(
  deps: ManifestsDeps,
  cniPlugin: () => Promise<CniPlugin>,
): (options: ManifestsOptions) => Promise<number> {
  return async (options) => {
    if (options.cni) {
      let target: CniTarget;
      try {
        target = await cniTargetFor(options, deps);
      } catch (error) {
        deps.stderr(`berth manifests --cni: ${(error as Error).message}\n`);
        return error instanceof WebhookEndpointError ? 2 : 1;
      }
      const plugin = await cniPlugin();
      const autoMode = autoModeComputeOf(options.config.scale.nodePool);
      deps.stdout(
        printManifests(cniManifests(target, plugin, autoMode), options.json ? 'json' : 'yaml'),
      );
      deps.stderr(vpcCniPatchNote(target));
      return 0;
    }
    if (options.delete) {
      const objects = berthManifestsToDelete(options.config.cluster, options.config.scale);
      deps.stdout(printManifests(objects, options.json ? 'json' : 'yaml'));
      return 0;
    }
    let endpoint: WebhookEndpoint;
    let failOpen: readonly FailOpen[];
    try {
      failOpen = failOpenOf(options.failOpen);
      endpoint = await endpointFor(options, deps);
    } catch (error) {
      deps.stderr(`berth manifests: ${describeFailure(error)}\n`);
      // A bad flag or endpoint is the user's to fix (2, like every usage error); AWS that cannot
      // be reached (no Region, no credentials) is the environment (3); a call that failed (a
      // missing stack) is an operational failure (1).
      return error instanceof WebhookEndpointError ? 2 : exitCodeOf(error);
    }
    const objects = berthManifests(
      endpoint,
      options.config.cluster,
      options.config.scale,
      failOpen,
    );
    deps.stdout(printManifests(objects, options.json ? 'json' : 'yaml'));
    return 0;
  };
}

/** Secrets Manager, in the secret's own region (taken from its ARN). */
export const secretsManagerReader: SecretReader = {
  async secretString(secretArn) {
    const region = secretArn.split(':')[3];
    const client = new SecretsManagerClient(region ? { region } : {});
    try {
      const out = await client.send(new GetSecretValueCommand({ SecretId: secretArn }));
      if (!out.SecretString) throw new Error(`secret ${secretArn} has no string value`);
      return out.SecretString;
    } finally {
      client.destroy();
    }
  },
};

/** CloudFormation: a stack's outputs by key. */
export const cloudFormationOutputs: StackOutputReader = {
  async outputs(stackName) {
    const client = new CloudFormationClient({});
    try {
      const out = await client.send(new DescribeStacksCommand({ StackName: stackName }));
      return Object.fromEntries(
        (out.Stacks?.[0]?.Outputs ?? []).flatMap((o) =>
          o.OutputKey && o.OutputValue ? [[o.OutputKey, o.OutputValue] as const] : [],
        ),
      );
    } finally {
      client.destroy();
    }
  },
};

/** The command's collaborators on this machine: AWS through the SDK, the process's streams, the data dir's CA. */
export const localManifestsDeps: ManifestsDeps = {
  secrets: secretsManagerReader,
  stacks: cloudFormationOutputs,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  localCa: async (tlsDir, host, newCa) =>
    (await ensureLocalTls(tlsDir, Date.now, [host], { newCa })).ca,
};
