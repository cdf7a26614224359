import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

export interface KeyPair {
  readonly key: string
  readonly cert: string
}

/** Where a data directory keeps the simulator's key and certificate, as one PEM file (XAPI: /etc/xensource/xapi-ssl.pem). */
export const certificateFile = (dataDir: string): string => join(dataDir, 'xapi-ssl.pem')

function pemBlocks(pem: string, label: string): string[] {
  return [...pem.matchAll(new RegExp(`-----BEGIN ${label}-----[\\s\\S]+?-----END ${label}-----\\n?`, 'g'))].map((match) => match[0])
}

/**
 * The simulator's TLS identity: made once per data directory, self-signed as
 * a freshly installed host's is, and kept so clients can pin it. openssl
 * makes it (Node has no certificate generator); the key file is private.
 */
export async function serverCertificate(dataDir: string, names: readonly string[]): Promise<KeyPair> {
  const file = certificateFile(dataDir)
  if (!existsSync(file)) {
    const scratch = mkdtempSync(join(tmpdir(), 'keel-xapi-tls-'))
    try {
      const altNames = names.map((name) => (/^[\d.]+$|:/.test(name) ? `IP:${name}` : `DNS:${name}`)).join(',')
      await promisify(execFile)('openssl', [
        'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '3650',
        '-subj', '/CN=keel-xapi-simulator', '-addext', `subjectAltName=${altNames}`,
        '-keyout', join(scratch, 'key.pem'), '-out', join(scratch, 'cert.pem'),
      ])
      writeFileSync(file, readFileSync(join(scratch, 'key.pem'), 'utf8') + readFileSync(join(scratch, 'cert.pem'), 'utf8'), { mode: 0o600 })
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  }
  const pem = readFileSync(file, 'utf8')
  const [key] = pemBlocks(pem, 'PRIVATE KEY')
  const [cert] = pemBlocks(pem, 'CERTIFICATE')
  if (key === undefined || cert === undefined) throw new Error(`${file} does not hold a private key and a certificate`)
  return { key, cert }
}
