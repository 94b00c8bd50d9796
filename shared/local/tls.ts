/**
 * The local server's TLS material: a private CA and a server certificate for 127.0.0.1,
 * localhost and any advertised address, signed by it, kept under `<data dir>/tls/`. The CA is what a cluster's webhook
 * `caBundle` (or curl's `--cacert`) trusts; it is made once and reused.
 */

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import forge from 'node-forge';

/** PEM files of the local TLS material. */
export interface LocalTls {
  readonly caPath: string;
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

const VALID_DAYS = 825;

/** Reads the TLS material from `dir`, creating it when missing or expiring within a day. */
export async function ensureLocalTls(
  dir: string,
  now: () => number = Date.now,
  names: readonly string[] = [],
): Promise<LocalTls> {
  // The certificate always covers loopback; a cluster outside this host (kind, minikube) reaches
  // the server at an advertised address, which must be in the certificate too.
  const wanted = [...new Set(['127.0.0.1', 'localhost', ...names])].filter(
    (name) => name !== '0.0.0.0' && name !== '::',
  );
  const caPath = join(dir, 'ca.crt');
  const certPath = join(dir, 'tls.crt');
  const keyPath = join(dir, 'tls.key');
  try {
    const [ca, cert, key] = await Promise.all(
      [caPath, certPath, keyPath].map((p) => readFile(p, 'utf8')),
    );
    const parsed = cert ? forge.pki.certificateFromPem(cert) : undefined;
    if (
      ca &&
      cert &&
      parsed &&
      key &&
      parsed.validity.notAfter.getTime() > now() + 86_400_000 &&
      wanted.every((name) => namesOf(parsed).includes(name))
    ) {
      return { caPath, ca, cert, key };
    }
  } catch {
    // Missing or unreadable: made anew below.
  }
  const material = issue(new Date(now()), wanted);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(caPath, material.ca);
  await writeFile(certPath, material.cert);
  await writeFile(keyPath, material.key, { mode: 0o600 });
  return { caPath, ...material };
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

function issue(
  notBefore: Date,
  names: readonly string[],
): { ca: string; cert: string; key: string } {
  const notAfter = new Date(notBefore.getTime() + VALID_DAYS * 86_400_000);
  const caKeys = forge.pki.rsa.generateKeyPair(2048);
  const ca = forge.pki.createCertificate();
  ca.publicKey = caKeys.publicKey;
  ca.serialNumber = randomSerial();
  ca.validity.notBefore = notBefore;
  ca.validity.notAfter = notAfter;
  const caName = [{ name: 'commonName', value: 'berth local CA' }];
  ca.setSubject(caName);
  ca.setIssuer(caName);
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());

  const keys = forge.pki.rsa.generateKeyPair(2048);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = randomSerial();
  cert.validity.notBefore = notBefore;
  cert.validity.notAfter = notAfter;
  cert.setSubject([{ name: 'commonName', value: 'berth local server' }]);
  cert.setIssuer(caName);
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
  cert.sign(caKeys.privateKey, forge.md.sha256.create());
  return {
    ca: forge.pki.certificateToPem(ca),
    cert: forge.pki.certificateToPem(cert),
    key: forge.pki.privateKeyToPem(keys.privateKey),
  };
}

/** A positive 16-byte serial number in hex (the leading nibble kept below 8). */
function randomSerial(): string {
  const hex = forge.util.bytesToHex(forge.random.getBytesSync(16));
  return `${(Number.parseInt(hex[0] ?? '0', 16) & 7).toString(16)}${hex.slice(1)}`;
}
