/**
 * Whether a SQLite database (WAL mode, as the kit opens them) may have changed since the last
 * look, by any connection of any process, for one 48-byte read: the first copy of the
 * wal-index header at the start of the `-shm` file (https://sqlite.org/walformat.html, "The
 * WAL-Index Header": its change counter, frame count, salts and checksum move with every
 * commit, and a commit is in it before the committing call returns).
 *
 * Why: a gate looks up a client's verdict on every connection so that a CLI change applies to
 * the next one. Each lookup is a read transaction (file locks, a stat), about 10 µs of a
 * rejected connection's ~90 µs in the gate's benchmark. Remembering verdicts until the header
 * moves keeps "the next connection" exact and costs one `pread`.
 *
 * When the header cannot be read (no `-shm` yet, another journal mode), everything counts as
 * changed: callers then read as they would without this.
 */
import { closeSync, openSync, readSync } from '../startup-builtins.ts'

const HEADER_BYTES = 48

export class WalChanges {
  readonly #shm: string
  #fd: number | undefined
  readonly #seen = Buffer.alloc(HEADER_BYTES)
  readonly #now = Buffer.alloc(HEADER_BYTES)
  #known = false

  /** `database`: the database file's path (the header is in `<database>-shm`). */
  constructor(database: string) {
    this.#shm = `${database}-shm`
  }

  /** True unless the database is known not to have changed since the previous call. */
  changed(): boolean {
    try {
      this.#fd ??= openSync(this.#shm, 'r')
      if (readSync(this.#fd, this.#now, 0, HEADER_BYTES, 0) !== HEADER_BYTES) return this.#unknown()
    } catch {
      return this.#unknown()
    }
    if (this.#known && this.#now.equals(this.#seen)) return false
    this.#now.copy(this.#seen)
    this.#known = true
    return true
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd)
    this.#fd = undefined
    this.#known = false
  }

  #unknown(): true {
    this.close()
    return true
  }
}

/**
 * `read`, remembered per key until the database changes (`WalChanges`). A value read while a
 * change landed is not kept for longer than that change's own look: every answer is one a
 * read at that moment could have given.
 *
 * @example const verdictOf = memoUntilChange(new WalChanges(path), (fp) => query.first(fp))
 */
export function memoUntilChange<K, V>(
  changes: WalChanges,
  read: (key: K) => Promise<V>,
  maxEntries = 10_000,
): (key: K) => Promise<V> {
  const memo = new Map<K, V>()
  let generation = 0
  return async (key) => {
    if (changes.changed()) {
      memo.clear()
      generation++
    } else if (memo.has(key)) {
      return memo.get(key) as V
    }
    const started = generation
    const value = await read(key)
    // Another call saw a change meanwhile, which may be newer than this read: do not keep it.
    if (started === generation) {
      if (memo.size >= maxEntries) memo.clear()
      memo.set(key, value)
    }
    return value
  }
}
