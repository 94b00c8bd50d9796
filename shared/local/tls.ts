/**
 * The local server's TLS material: a private CA and a server certificate for 127.0.0.1 and
 * localhost signed by it, kept under `<data dir>/tls/`. The CA is what a cluster's webhook
 * `caBundle` (or curl's `--cacert`) trusts; it is made once and reused.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
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
export async function ensureLocalTls(dir: string, now: () => number = Date.now): Promise<LocalTls> {
  const caPath = join(dir, 'ca.crt');
  const certPath = join(dir, 'tls.crt');
  const keyPath = join(dir, 'tls.key');
  try {
    const [ca, cert, key] = await Promise.all(
      [caPath, certPath, keyPath].map((p) => readFile(p, 'utf8')),
    );
    if (
      ca &&
      cert &&
      key &&
      forge.pki.certificateFromPem(cert).validity.notAfter.getTime() > now() + 86_400_000
    ) {
      return { caPath, ca, cert, key };
    }
  } catch {
    // Missing or unreadable: made anew below.
  }
  const material = issue(new Date(now()));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(caPath, material.ca);
  await writeFile(certPath, material.cert);
  await writeFile(keyPath, material.key, { mode: 0o600 });
  return { caPath, ...material };
}

function issue(notBefore: Date): { ca: string; cert: string; key: string } {
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
      altNames: [
        { type: 7, ip: '127.0.0.1' },
        { type: 2, value: 'localhost' },
      ],
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
