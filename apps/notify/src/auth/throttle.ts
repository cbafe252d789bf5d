/**
 * Sign-in throttling (policy in README.md, "Sign-in throttling"): two fixed windows kept by
 * @fastify/rate-limit, one per client address (checked before the body is read) and one
 * per user name (checked once the body names it, case-insensitively). Each counts the
 * attempts of a window of `loginThrottleWindow` that starts with the first attempt; past
 * the limit the answer is 429 `login_throttled` with `Retry-After`, without checking the
 * password, until the window ends (further attempts do not extend it). An attacker can
 * so hold an account for at most one window after stopping, and gets a bounded number
 * of guesses per window while attacking. Counters live in the process: each notify node
 * applies the limits on its own.
 */
import rateLimit from '@fastify/rate-limit'
import type { HttpApp } from '@gatehouse/kit'
import type { FastifyRequest } from 'fastify'
import type { Config } from '../config.ts'
import { errors } from '../errors.ts'

export interface LoginThrottle {
  /** onRequest hook: the client address's attempts. */
  byAddress(req: FastifyRequest): Promise<void>
  /** preHandler hook: the named account's attempts. */
  byAccount(req: FastifyRequest): Promise<void>
}

/** Register the plugin (no global limit) and build the two sign-in hooks. */
export async function loginThrottle(app: HttpApp, config: Config): Promise<LoginThrottle> {
  await app.register(rateLimit, { global: false })
  const timeWindow = config.loginThrottleWindow
  const address = app.createRateLimit({
    max: config.loginAttemptsPerAddress,
    timeWindow,
    // The plugin's default key: the address, an IPv6 client counted per /64 (it holds all of it).
    ipv6Subnet: 64,
  })
  const account = app.createRateLimit({
    max: config.loginAttemptsPerAccount,
    timeWindow,
    keyGenerator: (req) => {
      const body = req.body as { username?: unknown } | undefined
      return `login-account:${typeof body?.username === 'string' ? body.username.toLowerCase() : ''}`
    },
  })
  const check = async (limit: typeof address, req: FastifyRequest) => {
    const r = await limit(req)
    if (r.isAllowed || !r.isExceeded) return
    const seconds = Math.max(1, r.ttlInSeconds)
    throw errors.login_throttled.with({ headers: { 'retry-after': String(seconds) } }, seconds)
  }
  return {
    byAddress: (req) => check(address, req),
    byAccount: (req) => check(account, req),
  }
}
