/**
 * Whether `serve` answers, for `edgegate status`: the database alone cannot say it. With the
 * control plane down the registry still read "active" for every node, and ten minutes later
 * "silent", which blamed the nodes for an outage of the control plane itself.
 */
import { connect, isIP } from 'node:net'
import type { TLSSocket } from 'node:tls'
import { parseListenAddress } from '@gatehouse/kit/net.ts'
import { existsSync } from '@gatehouse/kit/startup-builtins.ts'

export interface ServerProbe {
  /** `https://host:port`, the address asked (a wildcard listen address is asked on loopback). */
  url: string
  answering: boolean
  /** `/readyz`'s status code when it answered. */
  status?: number
  /** Why it did not answer (connection refused, timed out, not TLS). */
  error?: string
  /** The control socket that answered for this address, when it did (no TLS asked then). */
  control_socket?: string
}

const PROBE_MS = 3000
/** The header a control socket's answers name their serve's HTTPS address in (control-socket.ts). */
export const LISTEN_HEADER = 'edgegate-listen'
/** A serve on this host answers its control socket at once; a stuck one is asked over HTTPS too. */
const CONTROL_SOCKET_MS = 1000

/** The URL of a listen address as a local client reaches it: a wildcard host is asked on loopback. */
export function probeUrl(listen: string): string {
  const { host, port } = parseListenAddress(listen)
  const local = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
  return `https://${local.includes(':') ? `[${local}]` : local}:${port}`
}

/**
 * Whether serve answers for `listen`: on its control socket when there is one on this host and
 * it answers for that address (no TLS to start), else over HTTPS (probeTls).
 */
export async function probeServer(listen: string, controlSocket = ''): Promise<ServerProbe> {
  const url = probeUrl(listen)
  if (controlSocket !== '' && existsSync(controlSocket)) {
    const local = await askControlSocket(controlSocket, url)
    if (local) return local
  }
  return probeTls(url)
}

/**
 * GET /readyz on serve's control socket (control-socket.ts): undefined when nothing answers
 * there in time, or the serve that answers listens elsewhere than the address asked about;
 * the HTTPS port is asked then, and says why it does not answer.
 */
function askControlSocket(path: string, url: string): Promise<ServerProbe | undefined> {
  return new Promise((resolve) => {
    let head = ''
    const socket = connect({ path })
    const finish = (probe: ServerProbe | undefined) => {
      clearTimeout(deadline)
      socket.destroy()
      resolve(probe)
    }
    const deadline = setTimeout(() => finish(undefined), CONTROL_SOCKET_MS)
    socket.once('error', () => finish(undefined))
    socket.once('connect', () => socket.end('GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'))
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1')
      const end = head.indexOf('\r\n\r\n')
      if (end < 0) {
        if (head.length > 4096) finish(undefined)
        return
      }
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(head)
      const listen = new RegExp(`^${LISTEN_HEADER}:[ \\t]*(\\S+)`, 'im').exec(head.slice(0, end))
      finish(
        status && listen?.[1] === url
          ? { url, answering: true, status: Number(status[1]), control_socket: path }
          : undefined,
      )
    })
    socket.once('end', () => finish(undefined))
  })
}

/**
 * GET /readyz at the listen address. Nothing is sent but the path (no credential), so the
 * server's certificate is not verified: the question is whether edgegate answers there, and the
 * CA that issued its certificate is often not on the machine that runs the CLI. The request is
 * written on a TLS socket and only the status line read: `node:https` would load Node's whole
 * HTTP client for one line (about 10 ms and 4 MiB of a status command, #22). TLS starts only
 * once the port accepts, on the connected socket: a control plane that is down costs no TLS at
 * all, and with no CA to verify against, the context loads none (`ca: []`; Node's default
 * context parses its whole root store, about 10 ms of CPU).
 */
function probeTls(url: string): Promise<ServerProbe> {
  const { host, port } = new URL(url)
  const hostname = host.replace(/:\d+$/, '')
  const address = hostname.replace(/^\[|\]$/g, '')
  return new Promise((resolve) => {
    let done = false
    let secure: TLSSocket | undefined
    const finish = (probe: ServerProbe) => {
      if (done) return
      done = true
      clearTimeout(deadline)
      secure?.destroy()
      socket.destroy()
      resolve(probe)
    }
    const failed = (err: NodeJS.ErrnoException) => finish({ url, answering: false, error: err.code ?? err.message })
    const socket = connect({ host: address, port: Number(port) })
    // One deadline for the whole probe. socket.setTimeout is an idle timeout that every byte
    // restarts: a peer that accepted and then trickled bytes (a stuck proxy, another protocol)
    // held status for as long as it went on.
    const deadline = setTimeout(
      () => finish({ url, answering: false, error: `no answer within ${PROBE_MS / 1000} s` }),
      PROBE_MS,
    )
    socket.once('error', failed)
    socket.once('connect', () => {
      const tls = process.getBuiltinModule('node:tls')
      const tlsSocket = tls.connect({
        socket,
        ca: [],
        rejectUnauthorized: false,
        ALPNProtocols: ['http/1.1'],
        ...(isIP(address) ? {} : { servername: address }),
      })
      secure = tlsSocket
      tlsSocket.once('secureConnect', () => {
        tlsSocket.end(`GET /readyz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
      })
      let head = ''
      tlsSocket.on('data', (chunk: Buffer) => {
        head += chunk.toString('latin1')
        const m = /^HTTP\/1\.[01] (\d{3})/.exec(head)
        if (m) finish({ url, answering: true, status: Number(m[1]) })
        else if (head.includes('\r\n') || head.length > 1024) finish({ url, answering: false, error: 'not HTTP' })
      })
      tlsSocket.once('end', () => finish({ url, answering: false, error: 'closed without answering' }))
      tlsSocket.once('error', failed)
    })
  })
}
