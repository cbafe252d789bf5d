/**
 * The control socket: a Unix socket where `serve` answers `GET /readyz` and `GET /healthz` in
 * plain HTTP for commands on the same host. `edgegate status` asks it before the TLS port:
 * starting `node:tls` and a handshake cost a status command more CPU than all the rest of it
 * (#22), as `tailscale status` avoids by asking tailscaled's local socket. Only the two probes
 * answer there, without a credential, as they do over HTTPS; nothing else is reachable through
 * it, and the socket file's mode (0660) decides who may ask.
 *
 * Each answer carries `edgegate-listen`, the HTTPS address this serve listens on: a status
 * command asking about another address (a second edgegate on the host) does not take this
 * serve's answer for it.
 */
import { chmodSync, existsSync, lstatSync, statSync, unlinkSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { connect } from 'node:net'
import { dirname } from 'node:path'
import { StartupError } from '@gatehouse/kit/errors.ts'
import type { FastifyInstance } from 'fastify'
import { LISTEN_HEADER } from './cli/server-probe.ts'

const PATHS = new Set(['/readyz', '/healthz'])

export interface ControlSocketOptions {
  path: string
  /** Given by the operator (flag, environment, file): a problem stops serve; the default is skipped. */
  explicit: boolean
  /** The HTTPS address answers name (`probeUrl` of the listen address serve is on). */
  listenUrl: string
  log: { info(msg: string): void; warn(msg: string): void }
}

/** Whether something answers on a Unix socket file (a live serve), or it was left by one that died. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ path })
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
}

function listenOn(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(path, () => {
      server.off('error', reject)
      resolve()
    })
  })
}

/**
 * Listen on the control socket; returns its `close`, or undefined when it is off (an empty
 * path, or the default's folder missing) or could not be opened with the default path (said
 * once in the log; serve goes on, and status asks over HTTPS).
 */
export async function openControlSocket(
  app: FastifyInstance,
  o: ControlSocketOptions,
): Promise<(() => Promise<void>) | undefined> {
  if (o.path === '') return undefined
  if (!existsSync(dirname(o.path))) {
    if (!o.explicit) return undefined
    throw new StartupError(
      `control socket ${o.path}: its folder ${dirname(o.path)} does not exist (--control-socket "" turns it off)`,
    )
  }
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0] ?? ''
    if (req.method !== 'GET' || !PATHS.has(path)) {
      res.writeHead(404, { 'content-type': 'application/json', [LISTEN_HEADER]: o.listenUrl })
      res.end('{"error":{"code":"not_found","message":"the control socket answers GET /readyz and /healthz only"}}')
      return
    }
    app.inject({ method: 'GET', url: path }).then(
      (r) => {
        const type = r.headers['content-type']
        res.writeHead(r.statusCode, { ...(type ? { 'content-type': type } : {}), [LISTEN_HEADER]: o.listenUrl })
        res.end(r.rawPayload)
      },
      () => {
        res.writeHead(500, { [LISTEN_HEADER]: o.listenUrl })
        res.end()
      },
    )
  })
  // Probes hold no connection open; a stuck client is not kept past what a status command waits.
  server.requestTimeout = 5000
  server.headersTimeout = 5000
  try {
    try {
      await listenOn(server, o.path)
    } catch (err) {
      // A socket file left by a serve that was killed: nothing answers on it, so it is ours to
      // replace. Anything else at the path (a mistyped file name) is never removed.
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err
      if (!lstatSync(o.path).isSocket()) throw new Error('a file that is not a socket is there; it was left as it is')
      if (await answers(o.path)) throw err
      unlinkSync(o.path)
      await listenOn(server, o.path)
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    const why =
      e.code === 'EADDRINUSE'
        ? 'another process answers there (a second edgegate serve?)'
        : e.code === 'EACCES'
          ? 'permission denied'
          : e.message
    const message = `control socket ${o.path}: ${why}`
    if (o.explicit) throw new StartupError(`${message} (--control-socket "" turns it off)`)
    o.log.warn(`${message}; edgegate status asks over HTTPS instead`)
    return undefined
  }
  const { ino } = statSync(o.path)
  // Owner and group: the probes are harmless, but who may ask is the operator's choice, by group.
  chmodSync(o.path, 0o660)
  o.log.info(`control socket on ${o.path}`)
  return () =>
    new Promise<void>((resolve) => {
      server.close(() => {
        // Removed only while it is still ours: a serve started since may have replaced it.
        try {
          if (statSync(o.path).ino === ino) unlinkSync(o.path)
        } catch {}
        resolve()
      })
      server.closeAllConnections()
    })
}
