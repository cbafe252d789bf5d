/**
 * SQLite checkpoints off the serving thread. In WAL mode a commit appends to the `-wal` file,
 * and by default the connection that commits past 1,000 log pages then copies the log into the
 * database file and syncs both to disk before its call returns: on a server's one thread, every
 * few megabytes written, every request waits for a copy and two fsyncs. With
 * `startBackgroundCheckpoints` the connection stops checkpointing itself (`wal_autocheckpoint=0`)
 * and a worker thread with its own connection does it every `intervalMs` instead
 * (`WORKER` below). Durability is unchanged: commits are in the log either way.
 * Measured on edgegate's observation merges: docs/performance/edgegate.md (2026-11-29).
 */
import { once } from 'node:events'
import type { DatabaseSync } from 'node:sqlite'
import { Worker } from 'node:worker_threads'

export interface BackgroundCheckpoints {
  /** Stop the worker (after a checkpoint in progress) and restore checkpoints on commit. */
  stop(): Promise<void>
}

export interface BackgroundCheckpointOptions {
  /** Between two checkpoints, in ms (default 100). */
  intervalMs?: number
  /** A log larger than this is emptied by a checkpoint that waits for the writer (default 64 MiB). */
  truncateBytes?: number
  /** Called with what went wrong when the worker cannot checkpoint or has stopped (default: ignored). */
  onError?: (message: string) => void
}

/**
 * The worker thread: its own connection to the database file, copying the write-ahead log into
 * the file every `intervalMs` while the serving thread writes. A PASSIVE checkpoint takes no lock
 * a writer waits on. SQLite starts the log over only when a writer finds it wholly copied, which
 * continuous writes can prevent: when the log has grown past `truncateBytes`, the worker says so
 * (`full`) and the serving thread empties it between two of its transactions.
 *
 * Plain JavaScript run by `eval`, not a TypeScript module: a worker loading a .ts file loads
 * Node's type stripper into its own heap first (measured: 26 MB and 55 ms to start against 17 MB
 * and 39 ms).
 */
const WORKER = `
const { statSync } = require('node:fs')
const { DatabaseSync } = require('node:sqlite')
const { parentPort, workerData } = require('node:worker_threads')
const { path, intervalMs, truncateBytes, stop } = workerData
const db = new DatabaseSync(path, { timeout: 1000 })
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)')
const walBytes = () => {
  try {
    return statSync(path + '-wal').size
  } catch {
    return 0
  }
}
parentPort.postMessage('started')
let failing = false
// Sleeps until the interval ends or the serving thread sets stop[0] to 1 and notifies.
while (Atomics.load(stop, 0) === 0) {
  Atomics.wait(stop, 0, 0, intervalMs)
  if (Atomics.load(stop, 0) !== 0) break
  try {
    passive.get()
    failing = false
    if (walBytes() > truncateBytes) parentPort.postMessage('full')
  } catch (err) {
    // Tried again next time; the serving thread hears of the first failure of a run.
    if (!failing) parentPort.postMessage({ error: err.message })
    failing = true
  }
}
db.close()
`

/** The default of SQLite's `wal_autocheckpoint`, restored when the worker stops or fails. */
const AUTOCHECKPOINT_PAGES = 1000

/** What `startBackgroundCheckpoints` needs of the serving connection's lock: its transactions come first. */
interface Lock {
  acquire(): Promise<void>
  release(): void
}

/**
 * Checkpoint the database at `path` (open as `connection`, in WAL mode, its transactions
 * serialised by `lock`) on a worker thread. Resolves once the worker has its connection; if it
 * cannot start, `connection` keeps checkpointing itself and this rejects.
 */
export async function startBackgroundCheckpoints(
  path: string,
  connection: DatabaseSync,
  lock: Lock,
  options: BackgroundCheckpointOptions = {},
): Promise<BackgroundCheckpoints> {
  const stop = new Int32Array(new SharedArrayBuffer(4))
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: {
      path,
      intervalMs: options.intervalMs ?? 100,
      truncateBytes: options.truncateBytes ?? 64 * 1024 * 1024,
      stop,
    },
    // Its own small heap: it holds one statement.
    resourceLimits: { maxOldGenerationSizeMb: 16 },
  })
  worker.unref()
  const restore = () => {
    if (connection.isOpen) connection.exec(`PRAGMA wal_autocheckpoint=${AUTOCHECKPOINT_PAGES}`)
  }
  const started = new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve())
    worker.once('error', reject)
    worker.once('exit', (code) => reject(new Error(`the checkpoint worker exited (${code}) before it started`)))
  })
  try {
    await started
  } catch (err) {
    restore()
    throw err
  }
  connection.exec('PRAGMA wal_autocheckpoint=0')
  let running = true
  let emptying = false
  // The log outgrew its bound: empty it between two transactions of this connection (the
  // worker has copied most of it already, so this copies the rest and truncates the file).
  const empty = async () => {
    if (emptying) return
    emptying = true
    await lock.acquire()
    try {
      if (connection.isOpen) connection.exec('PRAGMA wal_checkpoint(TRUNCATE)')
    } catch (err) {
      options.onError?.(`emptying the write-ahead log: ${(err as Error).message}`)
    } finally {
      lock.release()
      emptying = false
    }
  }
  worker.on('message', (m: 'full' | { error?: string }) => {
    if (m === 'full') void empty()
    else if (typeof m === 'object' && m.error) options.onError?.(m.error)
  })
  worker.on('error', (err) => options.onError?.(err.message))
  worker.on('exit', () => {
    // Stopped, or failed: the connection checkpoints on commit again.
    if (running) options.onError?.('the checkpoint worker stopped; checkpoints run on commit again')
    running = false
    restore()
  })
  return {
    async stop() {
      if (!running) return
      running = false
      const exited = once(worker, 'exit')
      // Held until it is gone: stopping is part of closing the database, which callers await.
      worker.ref()
      Atomics.store(stop, 0, 1)
      Atomics.notify(stop, 0)
      await exited
    },
  }
}
