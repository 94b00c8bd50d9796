/**
 * The local server's TLS material, kept under `<data dir>/tls/`: a private CA (`ca.crt`, with its
 * key `ca.key`) and a server certificate for 127.0.0.1, localhost and any advertised address
 * (`tls.crt`, `tls.key`), signed by it. The CA is what a cluster's webhook `caBundle` (or curl's
 * `--cacert`) trusts, so it is made once and kept: a server certificate that lacks a name, or is
 * expiring, is issued again by the same CA, and a new CA is made only when asked (`newCa`), loudly,
 * since every `caBundle` already applied stops matching it.
 */

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import forge from 'node-forge';
import { LocalCaError } from './errors.js';

/** PEM files of the local TLS material. */
export interface LocalTls {
  readonly caPath: string;
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

/** How to treat the material found. */
export interface LocalTlsOptions {
  /** Make a new CA even though one is kept (`--new-ca`). */
  readonly newCa?: boolean;
  /** Told of every change to the material (default: stderr). */
  readonly say?: (line: string) => void;
}

/** A server certificate lives 825 days (the CA/Browser Forum's old ceiling, which clients honour). */
const SERVER_DAYS = 825;
/** The CA outlives many server certificates, so re-issuing one never disturbs a `caBundle`. */
const CA_DAYS = 3650;
/** Material expiring within this is replaced before it is served. */
const RENEW_BEFORE_MS = 86_400_000;

const FILES = { ca: 'ca.crt', caKey: 'ca.key', cert: 'tls.crt', key: 'tls.key' } as const;

/**
 * Reads the TLS material from `dir`, making what is missing: the CA on first use (or when
 * `newCa`), the server certificate when it lacks one of `names`, is expiring, or was not signed
 * by the CA kept.
 */
export async function ensureLocalTls(
  dir: string,
  now: () => number = Date.now,
  names: readonly string[] = [],
  options: LocalTlsOptions = {},
): Promise<LocalTls> {
  const say = options.say ?? ((line: string) => process.stderr.write(`${line}\n`));
  // The certificate always covers loopback; a cluster outside this host (kind, minikube) reaches
  // the server at an advertised address, which must be in the certificate too.
  const wanted = [...new Set(['127.0.0.1', 'localhost', ...names])].filter(
    (name) => name !== '0.0.0.0' && name !== '::',
  );
  const path = (file: keyof typeof FILES) => join(dir, FILES[file]);
  const found = await readAll(dir);
  const at = new Date(now());
  let ca = found.ca === undefined ? undefined : parseCert(found.ca);
  let caKey = found.caKey === undefined ? undefined : parseKey(found.caKey);
  const server = found.cert === undefined ? undefined : parseCert(found.cert);
  if (ca && !options.newCa && found.key && server && serves(server, ca, wanted, now())) {
    return {
      caPath: path('ca'),
      ca: found.ca as string,
      cert: found.cert as string,
      key: found.key,
    };
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (options.newCa || ca === undefined) {
    if (found.ca !== undefined) {
      const why = ca === undefined ? 'the old one could not be read' : 'asked with --new-ca';
      say(
        `berth: made a NEW local CA in ${path('ca')} (${why}): every caBundle made from the old one no longer matches; apply berth manifests --local again`,
      );
    }
    ({ ca, caKey } = issueCa(at));
    // The key first: a CA certificate on disk without its key could never sign again.
    await writeFile(path('caKey'), forge.pki.privateKeyToPem(caKey), { mode: 0o600 });
    await writeFile(path('ca'), forge.pki.certificateToPem(ca));
  } else {
    const unusable = caProblem(ca, caKey, now());
    if (unusable !== undefined || caKey === undefined) {
      throw new LocalCaError(
        `the local CA in ${path('ca')} ${unusable ?? 'has no key kept'}, and the server certificate must be issued again (for ${wanted.join(', ')}): pass --new-ca to make a new CA, then apply berth manifests --local again, since every caBundle made from the old CA stops matching`,
      );
    }
  }
  const issued = issueServer(at, wanted, ca, caKey as forge.pki.rsa.PrivateKey);
  await writeFile(path('cert'), issued.cert);
  await writeFile(path('key'), issued.key, { mode: 0o600 });
  if (found.cert !== undefined && !options.newCa) {
    say(
      `berth: issued the local server certificate again for ${wanted.join(', ')}, signed by the same CA (${path('ca')}): caBundles already applied still match; a running berth serve uses it once restarted`,
    );
  }
  return { caPath: path('ca'), ca: forge.pki.certificateToPem(ca), ...issued };
}

/** The PEM files found in `dir`, each undefined when missing or unreadable. */
async function readAll(dir: string): Promise<Partial<Record<keyof typeof FILES, string>>> {
  const entries = await Promise.all(
    Object.entries(FILES).map(async ([name, file]) => {
      const text = await readFile(join(dir, file), 'utf8').catch(() => '');
      return [name, text === '' ? undefined : text] as const;
    }),
  );
  return Object.fromEntries(entries);
}

function parseCert(pem: string): forge.pki.Certificate | undefined {
  try {
    return forge.pki.certificateFromPem(pem);
  } catch {
    return undefined;
  }
}

function parseKey(pem: string): forge.pki.rsa.PrivateKey | undefined {
  try {
    return forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  } catch {
    return undefined;
  }
}

/** Whether `server` may be served as it is: signed by `ca`, naming `wanted`, not expiring. */
function serves(
  server: forge.pki.Certificate,
  ca: forge.pki.Certificate,
  wanted: readonly string[],
  nowMs: number,
): boolean {
  let signed: boolean;
  try {
    signed = ca.verify(server);
  } catch {
    // forge throws when the issuer's name differs: another CA's certificate.
    signed = false;
  }
  return (
    signed &&
    server.validity.notAfter.getTime() > nowMs + RENEW_BEFORE_MS &&
    ca.validity.notAfter.getTime() > nowMs + RENEW_BEFORE_MS &&
    wanted.every((name) => namesOf(server).includes(name))
  );
}

/** Why the kept CA cannot sign a new server certificate, if it cannot. */
function caProblem(
  ca: forge.pki.Certificate,
  key: forge.pki.rsa.PrivateKey | undefined,
  nowMs: number,
): string | undefined {
  if (key === undefined) return 'has no key kept (berth kept none before this version)';
  const publicKey = ca.publicKey as forge.pki.rsa.PublicKey;
  if (!publicKey.n.equals(key.n)) return 'does not match the key kept beside it';
  if (ca.validity.notAfter.getTime() <= nowMs + RENEW_BEFORE_MS) {
    return `expires ${ca.validity.notAfter.toISOString()}`;
  }
  return undefined;
}

/** The DNS names and IP addresses a certificate is valid for. */
function namesOf(cert: forge.pki.Certificate): string[] {
  const extension = cert.getExtension('subjectAltName') as
    | { altNames?: { type: number; value?: string; ip?: string }[] }
    | undefined;
  return (extension?.altNames ?? []).flatMap((name) => {
    const value = name.type === 7 ? name.ip : name.value;
    return value === undefined ? [] : [value];
  });
}

const CA_NAME = [{ name: 'commonName', value: 'berth local CA' }];

function issueCa(notBefore: Date): { ca: forge.pki.Certificate; caKey: forge.pki.rsa.PrivateKey } {
  const keys = forge.pki.rsa.generateKeyPair(2048);
  const ca = forge.pki.createCertificate();
  ca.publicKey = keys.publicKey;
  ca.serialNumber = randomSerial();
  ca.validity.notBefore = notBefore;
  ca.validity.notAfter = new Date(notBefore.getTime() + CA_DAYS * 86_400_000);
  ca.setSubject(CA_NAME);
  ca.setIssuer(CA_NAME);
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  ca.sign(keys.privateKey, forge.md.sha256.create());
  return { ca, caKey: keys.privateKey };
}

function issueServer(
  notBefore: Date,
  names: readonly string[],
  ca: forge.pki.Certificate,
  caKey: forge.pki.rsa.PrivateKey,
): { cert: string; key: string } {
  const keys = forge.pki.rsa.generateKeyPair(2048);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = randomSerial();
  cert.validity.notBefore = notBefore;
  // Never past the CA: a chain is valid only while every link is.
  cert.validity.notAfter = new Date(
    Math.min(notBefore.getTime() + SERVER_DAYS * 86_400_000, ca.validity.notAfter.getTime()),
  );
  cert.setSubject([{ name: 'commonName', value: 'berth local server' }]);
  cert.setIssuer(ca.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: names.map((name) =>
        isIP(name) ? { type: 7, ip: name } : { type: 2, value: name },
      ),
    },
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return {
    cert: forge.pki.certificateToPem(cert),
    key: forge.pki.privateKeyToPem(keys.privateKey),
  };
}

/** A positive 16-byte serial number in hex (the leading nibble kept below 8). */
function randomSerial(): string {
  const hex = forge.util.bytesToHex(forge.random.getBytesSync(16));
  return `${(Number.parseInt(hex[0] ?? '0', 16) & 7).toString(16)}${hex.slice(1)}`;
}
