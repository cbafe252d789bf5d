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
  /**
   * A log that has grown past this without starting over is caught up by the serving thread, and
   * the log file is cut back to this size when it starts over (default 64 MiB).
   */
  maxLogBytes?: number
  /** Called with what went wrong when the worker cannot checkpoint or has stopped (default: ignored). */
  onError?: (message: string) => void
}

/**
 * The worker thread: its own connection to the database file, copying the write-ahead log into
 * the file every `intervalMs` while the serving thread writes. A PASSIVE checkpoint takes no lock
 * a writer waits on. SQLite starts the log over only when a writer finds it wholly copied, which
 * continuous writes can prevent (the worker copies what was there when it began, and more has come
 * meanwhile): when the log holds more than `maxLogBytes`, the worker says so (`full`) and the
 * serving thread copies the rest between two of its transactions, so its next one starts the log
 * over. (Having the worker copy that rest while the serving thread held its connection, its
 * event loop free, was tried on 2026-12-05: edgegate's SQLite ingest lost ~8 % and its pull tail
 * gained nothing measurable, docs/performance/kit.md.)
 *
 * Plain JavaScript run by `eval`, not a TypeScript module: a worker loading a .ts file loads
 * Node's type stripper into its own heap first (measured: 26 MB and 55 ms to start against 17 MB
 * and 39 ms).
 */
const WORKER = `
const { DatabaseSync } = require('node:sqlite')
const { parentPort, workerData } = require('node:worker_threads')
const { path, intervalMs, maxLogBytes, stop } = workerData
const db = new DatabaseSync(path, { timeout: 1000 })
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)')
const pageBytes = db.prepare('PRAGMA page_size').get().page_size
parentPort.postMessage('started')
let failing = false
// The log's frames when it was last reported full.
let reported = -1
// Sleeps until the interval ends or the serving thread sets stop[0] to 1 and notifies.
while (Atomics.load(stop, 0) === 0) {
  Atomics.wait(stop, 0, 0, intervalMs)
  if (Atomics.load(stop, 0) !== 0) break
  try {
    // log: the committed frames (pages) in the log since it last started over; checkpointed: how
    // many of them are in the database file. Wholly copied is not enough: a transaction in
    // flight adds frames before the next one begins, and that one starts the log over only if
    // it finds them copied too. But a log that has not moved since it was last reported and is
    // wholly copied has had no writes: it is not reported again (an idle server's serving
    // thread caught up with nothing every interval).
    const { log, checkpointed } = passive.get()
    failing = false
    if (log * pageBytes > maxLogBytes && !(log === checkpointed && log === reported)) {
      reported = log
      parentPort.postMessage('full')
    }
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
  const maxLogBytes = options.maxLogBytes ?? 64 * 1024 * 1024
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: {
      path,
      intervalMs: options.intervalMs ?? 100,
      maxLogBytes,
      stop,
    },
    // Its own small heap: it holds one statement.
    resourceLimits: { maxOldGenerationSizeMb: 16 },
  })
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
  // A log file that grew while the log could not start over is cut back when it does.
  connection.exec(`PRAGMA journal_size_limit=${maxLogBytes}`)
  let running = true
  let catchingUp = false
  // The log outgrew its bound: copy the rest between two transactions of this connection (the
  // worker has copied most of it already), so the next one starts the log over.
  const catchUp = async () => {
    if (catchingUp) return
    catchingUp = true
    await lock.acquire()
    try {
      if (connection.isOpen) connection.exec('PRAGMA wal_checkpoint(PASSIVE)')
    } catch (err) {
      options.onError?.(`catching up with the write-ahead log: ${(err as Error).message}`)
    } finally {
      lock.release()
      catchingUp = false
    }
  }
  worker.on('message', (m: 'full' | { error?: string }) => {
    if (m === 'full') void catchUp()
    // The worker's connection says only what failed ("disk I/O error"): say what it was doing.
    else if (typeof m === 'object' && m.error) options.onError?.(`checkpointing the write-ahead log: ${m.error}`)
  })
  worker.on('error', (err) => options.onError?.(`the checkpoint worker: ${err.message}`))
  // Last, after the listeners (a 'message' listener refs the worker's port again): the worker
  // never keeps the process alive on its own.
  worker.unref()
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
