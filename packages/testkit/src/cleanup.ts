/**
 * Everything a helper starts is registered here and torn down at the latest when the
 * test process exits, also when a test failed or threw before its own cleanup ran.
 */
import { rmSync } from 'node:fs'

interface Entry {
  /** Best-effort synchronous teardown for the `exit` hook (kill pids, remove dirs). */
  sync: () => void
}

const entries = new Set<Entry>()
let installed = false

function install() {
  if (installed) return
  installed = true
  process.on('exit', () => {
    for (const e of [...entries].reverse()) {
      try {
        e.sync()
      } catch {
        // exiting anyway; nothing useful to do with a failed teardown here
      }
    }
  })
  // node --test sends SIGTERM to a file that times out; turn it into a normal exit so the
  // exit hook runs.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => process.exit(130))
  }
}

/** Register a synchronous teardown; returns a function that unregisters it. */
export function onExit(sync: () => void): () => void {
  install()
  const entry = { sync }
  entries.add(entry)
  return () => entries.delete(entry)
}

export function killQuietly(pid: number | undefined, signal: NodeJS.Signals = 'SIGKILL') {
  if (pid === undefined) return
  try {
    process.kill(pid, signal)
  } catch {
    // already gone
  }
}

export function removeQuietly(path: string) {
  try {
    rmSync(path, { recursive: true, force: true })
  } catch {
    // a leftover temp dir is harmless
  }
}
