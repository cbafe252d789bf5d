/**
 * TLS material for servers and clients: PEM files loaded with clear errors, HTTPS server
 * options with optional client-certificate verification, and an undici agent for
 * HTTPS + mTLS.
 */
import { X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { ServerOptions as HttpsServerOptions } from 'node:https'
import type { Server as TlsServer } from 'node:tls'
import { Agent } from 'undici'
import { StartupError } from './errors.ts'

export interface TlsFiles {
  /** PEM certificate chain path. */
  cert?: string
  /** PEM private key path. */
  key?: string
  /** PEM CA bundle path: trusted issuers of the peer's certificate. */
  ca?: string
}

export interface TlsMaterial {
  cert?: Buffer
  key?: Buffer
  ca?: Buffer
}

function readPem(path: string, what: string): Buffer {
  let data: Buffer
  try {
    data = readFileSync(path)
  } catch (err) {
    throw new StartupError(
      `${what} ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    )
  }
  if (!data.includes('-----BEGIN ')) throw new StartupError(`${what} ${path} is not a PEM file`)
  return data
}

/**
 * Read the PEM files that are named; a missing or unreadable file is a `StartupError`.
 *
 * @example const tls = loadTlsMaterial({ cert: '/etc/x/tls.crt', key: '/etc/x/tls.key' })
 */
export function loadTlsMaterial(files: TlsFiles): TlsMaterial {
  if ((files.cert === undefined) !== (files.key === undefined)) {
    throw new StartupError('TLS: a certificate and its key must be given together')
  }
  const out: TlsMaterial = {}
  if (files.cert) out.cert = readPem(files.cert, 'TLS certificate')
  if (files.key) out.key = readPem(files.key, 'TLS key')
  if (files.ca) out.ca = readPem(files.ca, 'TLS CA bundle')
  return out
}

export interface HttpsServerConfig extends TlsMaterial {
  /** Ask for a client certificate; with `requireClientCert` reject handshakes without a valid one. */
  requestClientCert?: boolean
  requireClientCert?: boolean
}

/**
 * Options for `https.createServer` / Fastify's `https`. Client certificates are verified
 * against `ca` when requested; TLS 1.2 is the floor.
 */
export function httpsServerOptions(config: HttpsServerConfig): HttpsServerOptions {
  if (!config.cert || !config.key) throw new TypeError('httpsServerOptions needs cert and key')
  if (config.requestClientCert && !config.ca) throw new TypeError('client-certificate verification needs a CA')
  return {
    cert: config.cert,
    key: config.key,
    ...(config.ca ? { ca: config.ca } : {}),
    minVersion: 'TLSv1.2',
    requestCert: config.requestClientCert === true,
    // With requestCert but not required, unauthorised peers still connect and the app
    // decides (e.g. bearer tokens beside mTLS); `socket.authorized` tells which.
    rejectUnauthorized: config.requireClientCert === true,
  }
}

/**
 * Give a running HTTPS server the certificate, key and CA its files hold now (a renewed
 * certificate), for new connections; open ones keep theirs. Nothing changes when a file cannot
 * be read or the key does not match the certificate (it throws). Returns the new certificate's
 * expiry as X.509 prints it and in ms since the epoch.
 */
export function reloadServerTls(
  server: Pick<TlsServer, 'setSecureContext'>,
  files: TlsFiles,
  config: Omit<HttpsServerConfig, keyof TlsMaterial> = {},
): { validTo: string; expiresAt: number } {
  const material = loadTlsMaterial(files)
  const options = httpsServerOptions({ ...material, ...config })
  server.setSecureContext(options)
  const cert = new X509Certificate(material.cert!)
  return { validTo: cert.validTo, expiresAt: cert.validToDate.getTime() }
}

export interface ClientTlsConfig extends TlsMaterial {
  /** Name to verify in the server certificate instead of the URL host. */
  servername?: string
  /** Connect timeout in ms (default 10 s). */
  connectTimeoutMs?: number
  /** Headers + body timeout in ms (default 30 s). */
  requestTimeoutMs?: number
}

/**
 * An undici dispatcher for HTTPS with optional client certificate. undici's `request`
 * never follows redirects; pair it with `requestNoRedirect` to refuse them explicitly.
 *
 * @example const agent = createTlsAgent({ ca, cert, key }); await request(url, { dispatcher: agent })
 */
export function createTlsAgent(config: ClientTlsConfig = {}): Agent {
  return new Agent({
    connect: {
      ...(config.ca ? { ca: config.ca } : {}),
      ...(config.cert ? { cert: config.cert } : {}),
      ...(config.key ? { key: config.key } : {}),
      ...(config.servername ? { servername: config.servername } : {}),
      minVersion: 'TLSv1.2',
      rejectUnauthorized: true,
      timeout: config.connectTimeoutMs ?? 10_000,
    },
    headersTimeout: config.requestTimeoutMs ?? 30_000,
    bodyTimeout: config.requestTimeoutMs ?? 30_000,
  })
}
