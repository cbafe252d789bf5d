/**
 * Process lifecycle: run an app's entry, print operator mistakes as one line, and stop
 * cleanly on SIGTERM/SIGINT (a second signal exits at once).
 */
import { StartupError } from './errors.ts'

export type Stop = () => Promise<void>

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
export async function runMain(options: RunOptions, start: () => Promise<Stop | undefined>): Promise<void> {
  let stop: Stop | undefined
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
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  try {
    stop = await start()
  } catch (err) {
    exitWithError(options.name, err)
  }
  starting = false
  if (!stop) {
    process.off('SIGTERM', onSignal)
    process.off('SIGINT', onSignal)
    if (stopping) process.exit(0)
    return
  }
  if (stopping) shutdown()
}

/** Print an error the way operators should see it, then exit non-zero. */
export function exitWithError(name: string, err: unknown, code = 1): never {
  if (err instanceof StartupError) {
    for (const line of err.lines) process.stderr.write(`${name}: ${line}\n`)
  } else {
    process.stderr.write(`${name}: unexpected error: ${(err as Error)?.stack ?? String(err)}\n`)
  }
  process.exit(code)
}
