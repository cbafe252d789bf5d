/**
 * Whether `serve` answers, for `edgegate status`: the database alone cannot say it. With the
 * control plane down the registry still read "active" for every node, and ten minutes later
 * "silent", which blamed the nodes for an outage of the control plane itself.
 */
import { connect } from 'node:tls'
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
 * CA that issued its certificate is often not on the machine that runs the CLI. The request is
 * written on a TLS socket and only the status line read: `node:https` would load Node's whole
 * HTTP client for one line (about 10 ms and 4 MiB of a status command, #22).
 */
export function probeServer(listen: string): Promise<ServerProbe> {
  const url = probeUrl(listen)
  const { host, port } = new URL(url)
  const hostname = host.replace(/:\d+$/, '')
  const address = hostname.replace(/^\[|\]$/g, '')
  return new Promise((resolve) => {
    let done = false
    const finish = (probe: ServerProbe) => {
      if (done) return
      done = true
      clearTimeout(deadline)
      socket.destroy()
      resolve(probe)
    }
    const socket = connect({
      host: address,
      port: Number(port),
      rejectUnauthorized: false,
      ALPNProtocols: ['http/1.1'],
    })
    // One deadline for the whole probe. socket.setTimeout is an idle timeout that every byte
    // restarts: a peer that accepted and then trickled bytes (a stuck proxy, another protocol)
    // held status for as long as it went on.
    const deadline = setTimeout(
      () => finish({ url, answering: false, error: `no answer within ${PROBE_MS / 1000} s` }),
      PROBE_MS,
    )
    socket.once('secureConnect', () => {
      socket.end(`GET /readyz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
    })
    let head = ''
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1')
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head)
      if (m) finish({ url, answering: true, status: Number(m[1]) })
      else if (head.includes('\r\n') || head.length > 1024) finish({ url, answering: false, error: 'not HTTP' })
    })
    socket.once('end', () => finish({ url, answering: false, error: 'closed without answering' }))
    socket.once('error', (err: NodeJS.ErrnoException) =>
      finish({ url, answering: false, error: err.code ?? err.message }),
    )
  })
}
