/**
 * Whether `serve` answers, for `edgegate status`: the database alone cannot say it. With the
 * control plane down the registry still read "active" for every node, and ten minutes later
 * "silent", which blamed the nodes for an outage of the control plane itself.
 */
import { request } from 'node:https'
import { parseListenAddress } from '@gatehouse/kit/net.ts'

export interface ServerProbe {
  /** `https://host:port`, the address asked (a wildcard listen address is asked on loopback). */
  url: string
  answering: boolean
  /** `/readyz`'s status code when it answered. */
  status?: number
  /** Why it did not answer (connection refused, timed out, not TLS). */
  error?: string
}

const PROBE_MS = 3000

/** The URL of a listen address as a local client reaches it: a wildcard host is asked on loopback. */
export function probeUrl(listen: string): string {
  const { host, port } = parseListenAddress(listen)
  const local = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
  return `https://${local.includes(':') ? `[${local}]` : local}:${port}`
}

/**
 * GET /readyz at the listen address. Nothing is sent but the path (no credential), so the
 * server's certificate is not verified: the question is whether edgegate answers there, and the
 * CA that issued its certificate is often not on the machine that runs the CLI.
 */
export function probeServer(listen: string): Promise<ServerProbe> {
  const url = probeUrl(listen)
  return new Promise((resolve) => {
    const req = request(`${url}/readyz`, { method: 'GET', rejectUnauthorized: false, timeout: PROBE_MS }, (res) => {
      res.resume()
      resolve({ url, answering: true, status: res.statusCode ?? 0 })
    })
    req.on('timeout', () => req.destroy(new Error(`no answer within ${PROBE_MS / 1000} s`)))
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ url, answering: false, error: err.code && err.code !== 'ERR_UNHANDLED' ? err.code : err.message }),
    )
    req.end()
  })
}
