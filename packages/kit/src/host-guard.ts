/**
 * A Host-header guard for listeners that rely on being reachable from loopback only
 * (dnsctl's unauthenticated API, notify's development mode). Without it a web page can
 * drive such an API by DNS rebinding: the browser connects to 127.0.0.1 but sends
 * `Host: attacker.example`. Browsers always send the name they resolved, so refusing
 * every Host that is not a loopback name or address, or a name the operator configured,
 * closes the hole.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { kitErrors } from './errors.ts'
import { isLoopback } from './net.ts'

export interface HostGuardOptions {
  /** Extra host names (or addresses) this listener is reached by, without port; case-insensitive. */
  names?: readonly string[]
}

/** The host name of a Host header value, lower-cased, without port or IPv6 brackets; undefined when malformed. */
export function hostNameOf(host: string | undefined): string | undefined {
  if (!host) return undefined
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+))(?::(\d{1,5}))?$/.exec(host)
  if (!m) return undefined
  return (m[1] ?? m[2])!.toLowerCase().replace(/\.$/, '')
}

/**
 * True when the Host header names loopback (`localhost`, `*.localhost` per RFC 6761,
 * 127.0.0.0/8, ::1) or one of `names`.
 *
 * @example isAllowedHost('127.0.0.1:8053') // true; isAllowedHost('attacker.example:8053') // false
 */
export function isAllowedHost(host: string | undefined, names: readonly string[] = []): boolean {
  const name = hostNameOf(host)
  if (name === undefined) return false
  if (name === 'localhost' || name.endsWith('.localhost')) return true
  if (isLoopback(name)) return true
  return names.some((n) => n.toLowerCase() === name)
}

/**
 * Refuse (403 `host_not_allowed`) every request whose Host is not allowed, before routing
 * work or body parsing. `createHttpApp` installs it when given `hostGuard`.
 *
 * @example await createHttpApp({ name: 'dnsctl', logger, hostGuard: { names: ['dns.internal'] } })
 */
export function installHostGuard(app: FastifyInstance, options: HostGuardOptions): void {
  const names = (options.names ?? []).map((n) => n.toLowerCase())
  app.addHook('onRequest', async (req: FastifyRequest) => {
    if (!isAllowedHost(req.headers.host, names)) {
      throw kitErrors.host_not_allowed.with({ cause: { host: req.headers.host ?? null } })
    }
  })
}
