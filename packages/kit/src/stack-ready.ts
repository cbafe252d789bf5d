/**
 * Startup checks for `npm start` (scripts/stack.ts and apps/<app>/stack.ts): a port that is
 * already taken and a service that accepts connections but never answers each end in one line
 * naming the app, the address and the cause, and every wait has a deadline.
 */
import type { ChildProcess } from 'node:child_process'
import { createSocket } from 'node:dgram'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { connect, createServer } from 'node:net'
import { isAbsolute, relative } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'

/** A startup failure of one app in the stack: its message is the one line to print. */
export class StackError extends Error {
  override name = 'StackError'
}

/**
 * Throw a StackError unless nothing listens on host:port (TCP).
 * @example await ensurePortFree('edgegate', '127.0.0.1', 8443, 'HTTPS')
 */
export function ensurePortFree(app: string, host: string, port: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', (err: NodeJS.ErrnoException) => {
      const cause =
        err.code === 'EADDRINUSE'
          ? 'is already in use by another process (a stack still running, or another service)'
          : `cannot be bound (${err.code ?? err.message})`
      reject(new StackError(`${app}: ${what} port ${host}:${port} ${cause}`))
    })
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()))
  })
}

export interface WaitHttpOptions {
  app: string
  url: string
  /** Whole wait, in ms. */
  timeoutMs: number
  /** Statuses that mean ready (default: 200 and 204). */
  ready?: number[]
  /** CA certificate(s) for an https URL. */
  ca?: Buffer
  /** The app's process: its exit ends the wait at once. */
  child?: ChildProcess
  /** Where the app logs, named in the error. */
  logFile?: string
}

type Probe = { ok: true } | { ok: false; cause: string }

function probeOnce(url: URL, ready: number[], ca: Buffer | undefined, timeoutMs: number): Promise<Probe> {
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve) => {
    const req = request(url, { method: 'GET', timeout: timeoutMs, ...(ca ? { ca } : {}) }, (res) => {
      res.resume()
      if (ready.includes(res.statusCode ?? 0)) resolve({ ok: true })
      else resolve({ ok: false, cause: `answered ${url.pathname} with HTTP ${res.statusCode}` })
    })
    req.on('timeout', () => {
      req.destroy()
      resolve({ ok: false, cause: `accepted the connection but did not answer within ${timeoutMs / 1000} s` })
    })
    req.on('error', (err: NodeJS.ErrnoException) => {
      resolve({
        ok: false,
        cause: err.code === 'ECONNREFUSED' ? 'refused the connection (not listening)' : err.message,
      })
    })
    req.end()
  })
}

/**
 * Poll `url` until it answers a ready status; on the deadline or the child's exit throw one
 * StackError line with the last cause seen.
 * @example await waitHttp({ app: 'notify', url: 'http://127.0.0.1:8480/readyz', timeoutMs: 20_000, child })
 */
export async function waitHttp(options: WaitHttpOptions): Promise<void> {
  const url = new URL(options.url)
  const ready = options.ready ?? [200, 204]
  const where = `${url.hostname}:${url.port || (url.protocol === 'https:' ? 443 : 80)}`
  const see = options.logFile ? `; see ${options.logFile}` : ''
  const deadline = Date.now() + options.timeoutMs
  let last = 'did not answer'
  for (;;) {
    const child = options.child
    if (child && (child.exitCode !== null || child.signalCode !== null)) {
      throw new StackError(`${options.app}: exited during startup (code ${child.exitCode ?? child.signalCode})${see}`)
    }
    const left = deadline - Date.now()
    if (left <= 0) {
      throw new StackError(`${options.app}: ${where} was not ready within ${options.timeoutMs / 1000} s: ${last}${see}`)
    }
    const result = await probeOnce(url, ready, options.ca, Math.max(100, Math.min(3000, left)))
    if (result.ok) return
    last = result.cause
    await delay(100)
  }
}

/**
 * Wait until host:port sends the first bytes of an SSH identification (`SSH-`), or throw one
 * StackError line: a backend that accepts but never greets would stall every gated client.
 */
export async function waitSshBanner(app: string, host: string, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = 'did not answer'
  while (Date.now() < deadline) {
    const wait = Math.max(100, Math.min(3000, deadline - Date.now()))
    const got = await new Promise<string>((resolve) => {
      const socket = connect({ host, port })
      const timer = setTimeout(() => {
        socket.destroy()
        resolve(`accepted the connection but sent no SSH identification within ${wait / 1000} s`)
      }, wait)
      socket.once('data', (chunk) => {
        clearTimeout(timer)
        socket.destroy()
        resolve(chunk.toString('latin1').startsWith('SSH-') ? '' : 'answered with something other than SSH')
      })
      socket.once('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer)
        resolve(err.code === 'ECONNREFUSED' ? 'refused the connection (not listening)' : err.message)
      })
    })
    if (got === '') return
    last = got
    await delay(100)
  }
  throw new StackError(`${app}: ${host}:${port} was not ready within ${timeoutMs / 1000} s: ${last}`)
}

/**
 * A path as printed in a command to paste from the repository root: relative when inside it.
 * @example shownPath('/repo', '/repo/.gatehouse/x.db') // '.gatehouse/x.db'
 */
export function shownPath(root: string, path: string): string {
  const rel = relative(root, path)
  return rel.startsWith('..') || isAbsolute(rel) ? path : rel
}

/** Like ensurePortFree for a UDP port (a DNS server needs both). */
export function ensureUdpPortFree(app: string, host: string, port: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createSocket(host.includes(':') ? 'udp6' : 'udp4')
    probe.once('error', (err: NodeJS.ErrnoException) => {
      probe.close()
      const cause = err.code === 'EADDRINUSE' ? 'is already in use by another process' : `cannot be bound (${err.code})`
      reject(new StackError(`${app}: ${what} UDP port ${host}:${port} ${cause}`))
    })
    probe.bind({ address: host, port, exclusive: true }, () => probe.close(() => resolve()))
  })
}

export interface SupervisedChild {
  /** From now on an exit is news: startup failures are reported by the wait that saw them. */
  ready(): void
  /**
   * SIGTERM, then SIGKILL after the grace period; resolves once the process is gone, at once
   * when it already is (exited, or killed by a signal: `exitCode` stays null then).
   */
  stop(): Promise<void>
}

let stackStopping = false

/**
 * The stack is stopping (scripts/stack.ts, on SIGINT, SIGTERM or SIGHUP): from now on a child's
 * exit is not news. Ctrl-C in a terminal reaches every process of the stack at once, so the
 * services exit on their own while the stack stops them in order, and each exit read as a crash
 * (`tlsgate exited with code 0 while the stack ran`). `false` again is for tests.
 */
export function setStackStopping(stopping = true): void {
  stackStopping = stopping
}

/**
 * Watch a process the stack started, from right after `spawn`: when it ends between `ready()`
 * and `stop()` (a crash, an OOM kill, `kill -9`), say so once with its log, so a stack that
 * looks alive is not silently missing a service, and Ctrl-C still stops the rest.
 * @example const knot = supervise(spawn('/usr/sbin/knotd', args), { what: 'knotd', log: ctx.log, logFile })
 */
export function supervise(
  child: ChildProcess,
  options: { what: string; log(line: string): void; logFile?: string; graceMs?: number },
): SupervisedChild {
  let watching = false
  const gone = () => child.exitCode !== null || child.signalCode !== null
  const exited = new Promise<void>((resolve) => {
    if (gone()) resolve()
    else
      child.once('exit', (code, signal) => {
        if (watching && !stackStopping) {
          const how = signal ? `was killed by ${signal}` : `exited with code ${code}`
          options.log(`${options.what} ${how} while the stack ran${options.logFile ? `; see ${options.logFile}` : ''}`)
        }
        resolve()
      })
  })
  return {
    ready() {
      watching = true
    },
    async stop() {
      watching = false
      if (gone()) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), options.graceMs ?? 10_000)
      await exited
      clearTimeout(timer)
    },
  }
}
