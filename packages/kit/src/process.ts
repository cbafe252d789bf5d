/**
 * Process lifecycle: run an app's entry, print operator mistakes as one line, and stop
 * cleanly on SIGTERM/SIGINT (a second signal exits at once).
 *
 * SIGHUP: Node's default ends the process at once, with no drain and no final write (a gate's
 * observations held for the next batch were lost). It arrives for two reasons. A terminal that
 * closed sends it to a program run in the foreground, which should then stop, in order, as on
 * SIGTERM. A service manager or a script sends it to ask a daemon to reload (logrotate's usual
 * `postrotate`, an `ExecReload=` with `kill -HUP`, a certificate renewal's deploy hook): stopping
 * would leave a service down that the operator meant to keep. So: stop when standard error is a
 * terminal; otherwise run the app's `reload` (edgegate re-reads its TLS certificate), or, for an
 * app with nothing to reload (configuration is read at start, logs go to standard output), say
 * so, and keep running.
 */
import { StartupError } from './errors.ts'

export type Stop = () => Promise<void>

/** What `start` may return: how to stop, and what a SIGHUP reloads (it logs its own outcome). */
export interface Started {
  stop: Stop
  reload?: () => Promise<void>
}

export interface RunOptions {
  /** Prefix of every line printed to stderr, e.g. `notify`. */
  name: string
  /** Longest time to wait for `stop` before exiting anyway (default 30 s). */
  drainTimeoutMs?: number
}

/**
 * Run `start`, which returns a function that stops what it started. Startup errors that
 * are the operator's (`StartupError`, including `ConfigError`) print `name: line` per
 * problem and exit 1; anything else is a bug and prints its stack.
 *
 * @example runMain({ name: 'dnsctl' }, async () => { const app = await start(); return () => app.close() })
 */
export async function runMain(options: RunOptions, start: () => Promise<Stop | Started | undefined>): Promise<void> {
  let stop: Stop | undefined
  let reload: (() => Promise<void>) | undefined
  let reloading = false
  let reloadAgain = false
  let starting = true
  let stopping = false
  const shutdown = () => {
    const timer = setTimeout(() => {
      process.stderr.write(`${options.name}: shutdown did not finish in time, exiting\n`)
      process.exit(1)
    }, options.drainTimeoutMs ?? 30_000)
    timer.unref()
    stop!().then(
      () => {
        clearTimeout(timer)
        process.exit(0)
      },
      (err) => {
        process.stderr.write(`${options.name}: shutdown failed: ${(err as Error).message}\n`)
        process.exit(1)
      },
    )
  }
  // Installed before start() so a signal during startup (migrations, probes) still ends
  // in an orderly stop once what was started can be stopped.
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`${options.name}: second ${signal}, exiting now\n`)
      process.exit(1)
    }
    stopping = true
    if (!starting) shutdown()
  }
  const onHangup = () => {
    if (process.stderr.isTTY) return onSignal('SIGHUP')
    if (stopping) return
    if (!reload) {
      process.stderr.write(
        `${options.name}: SIGHUP changes nothing: the configuration is read at start (restart to apply a change), and logs go to standard output (nothing to reopen)\n`,
      )
      return
    }
    // One reload at a time; a signal during one gets one more after it (the files may have
    // changed after the running one read them).
    if (reloading) {
      reloadAgain = true
      return
    }
    const run = (fn: () => Promise<void>) => {
      reloading = true
      fn()
        .catch((err) => process.stderr.write(`${options.name}: SIGHUP: reload failed: ${(err as Error).message}\n`))
        .finally(() => {
          reloading = false
          if (reloadAgain) {
            reloadAgain = false
            run(fn)
          }
        })
    }
    run(reload)
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  process.on('SIGHUP', onHangup)
  try {
    const started = await start()
    if (typeof started === 'function') stop = started
    else if (started) ({ stop, reload } = started)
  } catch (err) {
    exitWithError(options.name, err)
  }
  starting = false
  if (!stop) {
    process.off('SIGTERM', onSignal)
    process.off('SIGINT', onSignal)
    process.off('SIGHUP', onHangup)
    if (stopping) process.exit(0)
    return
  }
  if (stopping) shutdown()
}

/** Print an error the way operators should see it, then exit non-zero. */
export function exitWithError(name: string, err: unknown, code = 1): never {
  const listen = listenFailure(err)
  if (err instanceof StartupError) {
    for (const line of err.lines) process.stderr.write(`${name}: ${line}\n`)
  } else if (listen) {
    process.stderr.write(`${name}: ${listen}\n`)
  } else {
    process.stderr.write(`${name}: unexpected error: ${(err as Error)?.stack ?? String(err)}\n`)
  }
  process.exit(code)
}

const LISTEN_CAUSES: Record<string, string> = {
  EADDRINUSE: 'the address is already in use (another service, or this one still running)',
  EACCES: 'permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)',
  EADDRNOTAVAIL: 'no interface on this host has that address',
}

/**
 * A listen that failed for a reason the operator can fix, as one line naming the address;
 * undefined for any other error. It is an operator's mistake, not a bug: no stack trace.
 */
export function listenFailure(err: unknown): string | undefined {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number }
  if (e?.syscall !== 'listen' || !e.code || !(e.code in LISTEN_CAUSES)) return undefined
  const host = e.address?.includes(':') ? `[${e.address}]` : e.address
  const where = host === undefined ? '' : e.port === undefined ? ` on ${host}` : ` on ${host}:${e.port}`
  return `cannot listen${where}: ${LISTEN_CAUSES[e.code]}`
}
