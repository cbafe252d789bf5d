/**
 * A throwaway certificate authority for tests (the `openssl` CLI, EC P-256 keys), issuing
 * server and client certificates valid for 30 days (past the programs' 14-day expiry warning),
 * or for `days` (negative: already expired). Generated in a temp folder on every
 * run; nothing here is ever committed.
 */
import { execFileSync } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { requireBinary, tempDir } from './env.ts'

export interface IssuedCert {
  certPath: string
  keyPath: string
  cert: Buffer
  key: Buffer
  /** SHA-256 fingerprint of the DER certificate, lowercase hex without colons. */
  fingerprint: string
}

export interface IssueOptions {
  /** Validity from now in days (default 30); negative gives a certificate that has expired. */
  days?: number
}

export interface TestCa {
  dir: string
  caPath: string
  ca: Buffer
  /** A server certificate for these names (DNS names or IP addresses; default localhost + 127.0.0.1 + ::1). */
  issueServer(names?: string[], options?: IssueOptions): IssuedCert
  /** A client certificate with this common name (also a DNS SAN). */
  issueClient(commonName: string, options?: IssueOptions): IssuedCert
  remove(): void
}

/** @example const ca = createTestCa(); const server = ca.issueServer(); const client = ca.issueClient('gate-1') */
export function createTestCa(name = 'Gatehouse Test CA'): TestCa {
  const openssl = requireBinary('/usr/bin/openssl', 'openssl')
  const tmp = tempDir('gatehouse-ca-')
  const dir = tmp.path
  const run = (args: string[]) => execFileSync(openssl, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  const caKey = join(dir, 'ca.key')
  const caPath = join(dir, 'ca.crt')
  run([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    caKey,
    '-out',
    caPath,
    '-days',
    '60',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ])
  let serial = 0
  const issue = (cn: string, ext: string[], days = 30): IssuedCert => {
    const base = join(dir, `${++serial}-${cn.replace(/[^a-zA-Z0-9.-]/g, '_')}`)
    const keyPath = `${base}.key`
    const certPath = `${base}.crt`
    const extPath = `${base}.ext`
    writeFileSync(extPath, `${ext.join('\n')}\n`)
    run([
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyPath,
      '-out',
      `${base}.csr`,
      '-subj',
      `/CN=${cn}`,
    ])
    run([
      'x509',
      '-req',
      '-in',
      `${base}.csr`,
      '-CA',
      caPath,
      '-CAkey',
      caKey,
      '-set_serial',
      String(1000 + serial),
      '-out',
      certPath,
      '-days',
      String(days),
      '-extfile',
      extPath,
    ])
    const cert = readFileSync(certPath)
    return {
      certPath,
      keyPath,
      cert,
      key: readFileSync(keyPath),
      fingerprint: new X509Certificate(cert).fingerprint256.replaceAll(':', '').toLowerCase(),
    }
  }
  const san = (names: string[]) =>
    names.map((n) => (/^[\d.]+$/.test(n) || n.includes(':') ? `IP:${n}` : `DNS:${n}`)).join(',')
  return {
    dir,
    caPath,
    ca: readFileSync(caPath),
    issueServer(names = ['localhost', '127.0.0.1', '::1'], options = {}) {
      return issue(
        names[0]!,
        [
          'basicConstraints=CA:FALSE',
          'keyUsage=critical,digitalSignature',
          'extendedKeyUsage=serverAuth',
          `subjectAltName=${san(names)}`,
        ],
        options.days,
      )
    },
    issueClient(commonName: string, options = {}) {
      return issue(
        commonName,
        [
          'basicConstraints=CA:FALSE',
          'keyUsage=critical,digitalSignature',
          'extendedKeyUsage=clientAuth',
          `subjectAltName=DNS:${commonName}`,
        ],
        options.days,
      )
    },
    remove: () => tmp.remove(),
  }
}
