/**
 * Long transfers through a gate (sshproxy, tlsgate) leave the Node process: once a relayed
 * connection has moved `afterBytes`, both its sockets go to a small helper program
 * (`packages/kit/native/splice-relay.c`) that moves the bytes with splice(2), never copying
 * them through user space.
 *
 * Why: relaying in JavaScript is already at its floor (reused read buffers, one write per
 * read; the relay's own code is under 5 % of a profile), and 61 % of the gate's CPU was the
 * `write` system call copying each byte in and out of the process. On two cores the gate's
 * ~1 CPU-second per GiB competes with the client and the server, which is the gap to a direct
 * transfer. Node offers no splice, and the project takes no native addons built against Node's
 * ABI; a separate program inherits the two sockets as ordinary file descriptors (Node's
 * `spawn` with sockets in `stdio`), so nothing links against Node.
 *
 * Both sockets stay open in the gate while the helper runs (Node stops reading them when it
 * hands them over, and the relay has already flushed its writes), so every connection keeps
 * its place in the gate's bookkeeping: connection cap, drain on shutdown, metrics, logs. When
 * the helper exits, the gate destroys both sockets; when the gate destroys one (drain timeout,
 * an error), the helper is stopped. The helper reports its byte counts on stdout.
 *
 * Without the helper (no C compiler at install, `--splice-after 0`, `max` helpers running, a
 * failed spawn) a connection simply stays in-process.
 */
import { spawn } from 'node:child_process'
import { accessSync, constants, readFileSync } from 'node:fs'
import type { Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import type { Logger } from './logger.ts'
import { type AppMetrics, Counter, Gauge } from './metrics.ts'
import type { ReusedReads } from './reused-reads.ts'

/** Where `npm ci` builds the helper (packages/kit/scripts/build-splice-relay.ts). */
export const SPLICE_HELPER_PATH = fileURLToPath(new URL('../native/build/splice-relay', import.meta.url))

/** The helper's exit status when the connection went idle (see splice-relay.c). */
const EXIT_IDLE = 2
/** Its exit status for arguments it does not take: it exits before touching either socket. */
const EXIT_USAGE = 3

/** The helper if it is built and executable here, else undefined. */
export function findSpliceHelper(path = SPLICE_HELPER_PATH): string | undefined {
  try {
    accessSync(path, constants.X_OK)
    return path
  } catch {
    return undefined
  }
}

export interface SpliceRelayOptions {
  /** The helper program; undefined keeps every connection in-process. */
  helper: string | undefined
  /** Hand a connection over once it has relayed this many bytes (both ways); 0: never. */
  afterBytes: number
  /** Helpers running at once; connections beyond stay in-process. */
  max: number
  logger: Logger
  /** Adds `<app>_splice_relays`, `<app>_splice_handoffs_total` and the helpers' CPU. */
  metrics?: AppMetrics | undefined
}

export interface SplicedConnection {
  client: Socket
  backend: Socket
  /** Both sockets' reads (the relay's sinks); a handed-over socket must never be resumed. */
  clientReads: ReusedReads
  backendReads: ReusedReads
  /** The relay's idle timeout (0: none): the helper enforces it after the handover. */
  idleMs: number
  /** Counts of the bytes the helper moved, client to backend and back. */
  counted(up: number, down: number): void
  /** The helper closed the connection for being idle. */
  idle(): void
}

/** How long one side may still send after the other finished (as the in-process relays' `closeSoon`). */
const GRACE_MS = 5000

/**
 * Added to a helper's niceness: the relay runs a step behind the programs at both ends, so it
 * moves what queued up while they ran instead of preempting them on every packet (see
 * splice-relay.c). Measured on two cores, medians of seven runs each: SSH uploads through the
 * gate went from 0.82–0.89 of direct to 0.94–1.05, downloads from 0.93–0.97 to 1.02–1.18, with
 * 9–12 % less CPU per GiB for the whole machine (docs/performance/sshproxy.md). New connections, handled by the gate itself, keep its priority.
 */
export const HELPER_NICE = 10

export class SpliceRelays {
  readonly #o: SpliceRelayOptions
  #running = 0
  #handoffs?: { inc(): void }
  /** Why the helper cannot be used (it refused its arguments), once it has. */
  #unusable: string | undefined

  constructor(options: SpliceRelayOptions) {
    this.#o = options
    const m = options.metrics
    if (!m) return
    const running = () => this.#running
    new Gauge({
      name: `${m.prefix}splice_relays`,
      help: 'Connections relayed by splice helpers now',
      registers: [m.registry],
      collect() {
        this.set(running())
      },
    })
    this.#handoffs = m.counter('splice_handoffs_total', 'Connections handed to a splice helper')
    // The helpers are the gate's only children: their CPU is the reaped children's time.
    let counted = 0
    new Counter({
      name: `${m.prefix}splice_helper_cpu_seconds_total`,
      help: 'CPU time of the splice helpers that have exited',
      registers: [m.registry],
      collect() {
        const now = reapedChildrenCpuSeconds()
        if (now > counted) this.inc(now - counted)
        counted = now
      },
    })
  }

  get enabled(): boolean {
    return this.#o.helper !== undefined && this.#o.afterBytes > 0 && this.#o.max > 0 && this.#unusable === undefined
  }

  /** Helpers running now. */
  get running(): number {
    return this.#running
  }

  /**
   * Watch one relayed connection: returns the function the relay calls with every chunk it
   * moved (either way), or undefined when connections are not handed over here.
   */
  watch(c: SplicedConnection): ((bytes: number) => void) | undefined {
    if (!this.enabled) return undefined
    let moved = 0
    let started = false
    return (bytes) => {
      moved += bytes
      if (started || moved < this.#o.afterBytes || this.#running >= this.#o.max) return
      started = true
      this.#handOver(c)
    }
  }

  #handOver(c: SplicedConnection): void {
    const { client, backend } = c
    this.#running++
    c.clientReads.detached = true
    c.backendReads.detached = true
    client.pause()
    backend.pause()
    client.setTimeout(0)
    // Settled once: the sockets went to the helper, or one closed first (nothing to hand over).
    let settled = false
    const abort = () => {
      if (settled) return
      settled = true
      this.#running--
      client.off('drain', flushed)
      backend.off('drain', flushed)
    }
    // A write still queued holds bytes the helper would overtake: wait until both are out.
    const flushed = () => {
      if (settled) return
      // Destroyed without 'close' yet: the handle is gone.
      if (client.destroyed || backend.destroyed) return abort()
      for (const s of [client, backend]) {
        if (s.writableLength > 0) {
          s.once('drain', flushed)
          return
        }
      }
      settled = true
      client.off('close', abort)
      backend.off('close', abort)
      this.#handoffs?.inc()
      this.#spawn(c)
    }
    client.once('close', abort)
    backend.once('close', abort)
    // Called from a relay's sink before it writes the chunk at hand: look after that write.
    process.nextTick(flushed)
  }

  #spawn(c: SplicedConnection): void {
    const { client, backend } = c
    const helper = this.#o.helper as string
    const resumeInProcess = () => {
      this.#running--
      c.clientReads.detached = false
      c.backendReads.detached = false
      if (c.idleMs > 0) client.setTimeout(c.idleMs)
      client.resume()
      backend.resume()
    }
    // Not started (e.g. EAGAIN at the process limit): the connection goes on in-process.
    const inProcess = (reason: string) => {
      this.#o.logger.warn({ reason }, 'splice relay helper did not start; relaying in-process')
      resumeInProcess()
    }
    let child: ReturnType<typeof spawn>
    try {
      child = spawn(helper, [String(c.idleMs), String(GRACE_MS), String(HELPER_NICE)], {
        stdio: ['ignore', 'pipe', 'pipe', client, backend],
      })
    } catch (err) {
      inProcess((err as Error).message)
      return
    }
    let stderr = ''
    let partial = ''
    child.stdout?.setEncoding('latin1').on('data', (text: string) => {
      const lines = (partial + text).split('\n')
      partial = lines.pop() ?? ''
      for (const line of lines) {
        const [up, down] = line.split(' ').map(Number)
        if (Number.isSafeInteger(up) && Number.isSafeInteger(down)) c.counted(up as number, down as number)
      }
    })
    child.stderr?.setEncoding('utf8').on('data', (text: string) => {
      if (stderr.length < 1024) stderr += text
    })
    const stop = () => child.kill('SIGTERM')
    let spawned = false
    let failed = false
    child.once('spawn', () => {
      spawned = true
    })
    child.on('error', (err) => {
      if (spawned) return // a failed kill: the helper ends with the gate anyway
      failed = true
      client.off('close', stop)
      backend.off('close', stop)
      inProcess(err.message)
    })
    child.once('close', (code, signal) => {
      if (failed) return
      client.off('close', stop)
      backend.off('close', stop)
      if (code === EXIT_USAGE && !client.destroyed && !backend.destroyed) {
        // A helper built from other sources than this gate's (a checkout updated without
        // rebuilding it): it touched neither socket, so this connection goes on in-process,
        // and so does every later one.
        if (this.#unusable === undefined) {
          this.#unusable = stderr.trim() || `exit status ${code}`
          this.#o.logger.error(
            { helper, reason: this.#unusable },
            'splice relay helper does not match this version (run `npm run build:splice`); relaying every connection in-process',
          )
        }
        resumeInProcess()
        return
      }
      this.#running--
      if (code === EXIT_IDLE) c.idle()
      else if (code !== 0 && signal === null && stderr !== '') {
        this.#o.logger.warn({ code, reason: stderr.trim() }, 'splice relay helper failed')
      }
      client.destroy()
      backend.destroy()
    })
    client.once('close', stop)
    backend.once('close', stop)
  }
}

/** A gate's relays: from its `serve` settings (absent: every connection in-process). */
export function spliceRelaysFor(
  settings: { afterBytes: number; max: number } | undefined,
  logger: Logger,
  metrics: AppMetrics,
): SpliceRelays {
  return new SpliceRelays({
    helper: settings ? findSpliceHelper() : undefined,
    afterBytes: settings?.afterBytes ?? 0,
    max: settings?.max ?? 0,
    logger,
    metrics,
  })
}

/** What the gates' route contexts share for a relay. */
export interface RelayContext {
  splice?: SpliceRelays | undefined
  idleTimeoutMs: number
  metrics: { up: { inc(n: number): void }; down: { inc(n: number): void } }
  logger: Logger
  route: { name: string }
}

/**
 * Watch one of a gate's relayed connections (`SpliceRelays.watch`): the helper's bytes go to the
 * route's byte counters, its idle close is logged with `idleMessage`. Returns what the relay
 * calls with every chunk it moves, or undefined.
 */
export function watchRelay(
  ctx: RelayContext,
  sockets: { client: Socket; backend: Socket; clientReads: ReusedReads; backendReads: ReusedReads },
  idleMessage: string,
): ((bytes: number) => void) | undefined {
  return ctx.splice?.watch({
    ...sockets,
    idleMs: ctx.idleTimeoutMs,
    counted: (up, down) => {
      ctx.metrics.up.inc(up)
      ctx.metrics.down.inc(down)
    },
    idle: () => ctx.logger.info({ route: ctx.route.name }, idleMessage),
  })
}

/** User and system CPU seconds of this process's reaped children (Linux /proc; 0 elsewhere). */
function reapedChildrenCpuSeconds(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'latin1')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(f[13]) + Number(f[14])) / 100 // cutime, cstime in USER_HZ (100 on Linux)
  } catch {
    return 0
  }
}

/** One line for a gate's configuration report. */
export function describeSplice(splice: { afterBytes: number; max: number } | undefined, helper: string | undefined) {
  if (!splice || splice.afterBytes === 0 || splice.max === 0) return 'splice relay: off (every connection in-process)'
  if (!helper) {
    return 'splice relay: helper not built (run `npm run build:splice`, needs a C compiler); every connection in-process'
  }
  const mib = splice.afterBytes / 1024 / 1024
  const after = Number.isInteger(mib) ? `${mib} MiB` : `${splice.afterBytes} bytes`
  return `splice relay: connections that relay ${after} move to ${helper}, up to ${splice.max} at once`
}
