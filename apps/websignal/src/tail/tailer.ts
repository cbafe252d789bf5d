/**
 * A small file poller of our own (the common npm tail library leaks listeners on Node 24):
 * stat by inode and size every interval, read from the stored offset, split lines.
 *
 * - First start without a stored offset: from the end of the file.
 * - Rename rotation (inode changes): the new file is read from 0, and the old one stays open
 *   and is read alongside it until it has not grown for `rotatedGraceMs`. A server keeps
 *   writing to the renamed file until it reopens its log (nginx after `USR1`, Apache after a
 *   graceful restart), so its last lines arrive after the new file appears. Nothing is lost.
 * - Copytruncate / truncation (size below our offset, or the file's first bytes changed:
 *   it was truncated and written past our offset between two polls): read again from 0 and
 *   count a truncation. Lines written between the copy and the truncate are lost
 *   (unavoidable with copytruncate; documented).
 * - A missing file: wait for it, then read from 0. Deletion: the open descriptor is read
 *   like a rotated file's, while the path is waited for.
 * - Lines longer than `maxLineBytes` are cut off and reported as too long.
 * Each switch of file (rotation, truncation, reappearance) counts as a restart.
 */
import type { Stats } from 'node:fs'
import { type FileHandle, open, stat } from 'node:fs/promises'

export interface TailPosition {
  dev: number
  ino: number
  offset: number
}

export interface TailEvents {
  /**
   * Lines read in one batch, and the position to resume from: after the last complete line of
   * the current file. Lines from a rotated-away file carry the current file's position, so a
   * restart never reads the current file again from 0.
   */
  lines(lines: string[], position: TailPosition): void
  /** A line over the bound was dropped. */
  tooLong(): void
  /** The tailer switched files (rotation, truncation, reappearance). */
  restart(reason: 'rotated' | 'truncated' | 'reappeared'): void
}

export interface TailerOptions {
  path: string
  /** Where to resume (from a previous run); undefined = from the end. */
  start?: TailPosition
  maxLineBytes: number
  /** Read buffer size (bytes). */
  chunkBytes?: number
  /** How long a rotated-away or deleted file is still read after it last grew (ms). */
  rotatedGraceMs?: number
  now?: () => number
}

export type TailState = 'waiting' | 'reading' | 'failed'

/** How many of a file's first bytes are remembered to notice it was truncated and refilled. */
const HEAD_BYTES = 64

/** One open file: where reading stands in it, and the line cut at the last read's end. */
interface Cursor {
  fh: FileHandle
  pos: TailPosition
  /** After the last complete line. */
  complete: TailPosition
  partial: Buffer | undefined
  /** Inside a line over the bound: drop bytes until its end. */
  skipping: boolean
  /** The file's first bytes as read (up to HEAD_BYTES). */
  head: Buffer | undefined
  /** For a rotated-away file: when it last grew. */
  grewAt: number
}

export class Tailer {
  readonly path: string
  state: TailState = 'waiting'
  /** Last error that kept the input from starting (permission denied, not a file). */
  error: string | undefined
  readonly #events: TailEvents
  readonly #max: number
  readonly #buf: Buffer
  readonly #graceMs: number
  readonly #now: () => number
  #cur: Cursor | undefined
  /** Rotated-away or deleted files still read until they stop growing. */
  #retired: Cursor[] = []
  #start: TailPosition | undefined
  #first = true

  constructor(options: TailerOptions, events: TailEvents) {
    this.path = options.path
    this.#events = events
    this.#max = options.maxLineBytes
    this.#start = options.start
    this.#buf = Buffer.allocUnsafe(options.chunkBytes ?? 1024 * 1024)
    this.#graceMs = options.rotatedGraceMs ?? 5000
    this.#now = options.now ?? Date.now
  }

  /** Whether the input has started: its file is open, or it is waiting for a file that does not exist yet. */
  get started(): boolean {
    return this.state !== 'failed'
  }

  /** How many rotated-away files are still being read. */
  get draining(): number {
    return this.#retired.length
  }

  /** One poll: stat, switch files if needed, read what is new. Never throws. */
  async poll(): Promise<void> {
    try {
      await this.#poll()
    } catch (err) {
      this.state = 'failed'
      this.error = (err as NodeJS.ErrnoException).code ?? (err as Error).message
    }
  }

  async #poll(): Promise<void> {
    let st: Stats | undefined
    try {
      st = await stat(this.path)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
    if (st && !st.isFile()) throw Object.assign(new Error('not a regular file'), { code: 'not a regular file' })
    const first = this.#first
    this.#first = false
    const cur = this.#cur
    if (cur) {
      if (!st || st.ino !== cur.pos.ino || st.dev !== cur.pos.dev) {
        // Rotated or deleted: the old file is read to its end now and kept open for late writes.
        await this.#drain(cur)
        cur.grewAt = this.#now()
        this.#retired.push(cur)
        this.#cur = undefined
        if (st) {
          await this.#openAt(st, 0)
          this.#events.restart('rotated')
        }
      } else if (st.size < cur.pos.offset || (await this.#headChanged(cur))) {
        cur.partial = undefined
        cur.head = undefined
        cur.skipping = false
        cur.pos.offset = 0
        cur.complete = { ...cur.pos }
        this.#events.restart('truncated')
      }
    } else if (st) {
      const s = this.#start
      this.#start = undefined
      if (s && s.ino === st.ino && s.dev === st.dev && s.offset <= st.size) await this.#openAt(st, s.offset)
      else if (s) {
        // The stored file was rotated away while we were down: the new one is read whole.
        await this.#openAt(st, 0)
        this.#events.restart('rotated')
      } else if (first) await this.#openAt(st, st.size)
      else {
        await this.#openAt(st, 0)
        this.#events.restart('reappeared')
      }
    }
    this.error = undefined
    await this.#drainRetired()
    if (!this.#cur) {
      this.state = 'waiting'
      return
    }
    this.state = 'reading'
    await this.#drain(this.#cur)
    await this.#rememberHead(this.#cur)
  }

  /** Read what rotated-away files gained; close those that stopped growing. */
  async #drainRetired(): Promise<void> {
    if (this.#retired.length === 0) return
    const now = this.#now()
    const kept: Cursor[] = []
    for (const c of this.#retired) {
      if ((await this.#drain(c)) > 0) c.grewAt = now
      if (now - c.grewAt >= this.#graceMs) await c.fh.close().catch(() => {})
      else kept.push(c)
    }
    this.#retired = kept
  }

  /** Whether the open file's first bytes differ from those remembered (truncated and refilled). */
  async #headChanged(c: Cursor): Promise<boolean> {
    const head = c.head
    if (!head || head.length === 0) return false
    const now = Buffer.alloc(head.length)
    const { bytesRead } = await c.fh.read(now, 0, head.length, 0)
    return bytesRead < head.length || !now.equals(head)
  }

  /** Remember the file's first bytes until HEAD_BYTES of them exist. */
  async #rememberHead(c: Cursor): Promise<void> {
    if ((c.head?.length ?? 0) >= HEAD_BYTES) return
    const want = Math.min(HEAD_BYTES, c.pos.offset)
    if (want <= (c.head?.length ?? 0)) return
    const buf = Buffer.alloc(want)
    const { bytesRead } = await c.fh.read(buf, 0, want, 0)
    c.head = buf.subarray(0, bytesRead)
  }

  async #openAt(st: { ino: number; dev: number }, offset: number): Promise<void> {
    const fh = await open(this.path, 'r')
    const real = await fh.stat()
    // The path may have been replaced between stat and open: trust the descriptor.
    const pos = { dev: real.dev, ino: real.ino, offset: real.ino === st.ino ? offset : 0 }
    this.#cur = { fh, pos, complete: { ...pos }, partial: undefined, skipping: false, head: undefined, grewAt: 0 }
  }

  /** Read to the current end of a file; returns the bytes read. */
  async #drain(c: Cursor): Promise<number> {
    let total = 0
    for (;;) {
      const { bytesRead } = await c.fh.read(this.#buf, 0, this.#buf.length, c.pos.offset)
      if (bytesRead === 0) return total
      total += bytesRead
      this.#split(this.#buf.subarray(0, bytesRead), c)
      if (bytesRead < this.#buf.length) return total
    }
  }

  #split(chunk: Buffer, c: Cursor): void {
    const lines: string[] = []
    let startIdx = 0
    for (;;) {
      const nl = chunk.indexOf(10, startIdx)
      if (nl === -1) break
      if (c.skipping) c.skipping = false
      else {
        const head = c.partial
        const len = (head?.length ?? 0) + nl - startIdx
        if (len > this.#max) this.#events.tooLong()
        else {
          const body = head ? Buffer.concat([head, chunk.subarray(startIdx, nl)]) : chunk.subarray(startIdx, nl)
          let end = body.length
          if (end > 0 && body[end - 1] === 13) end--
          if (end > 0) lines.push(body.toString('utf8', 0, end))
        }
      }
      c.partial = undefined
      startIdx = nl + 1
    }
    if (startIdx < chunk.length) {
      const rest = chunk.subarray(startIdx)
      if (c.skipping) {
        // Still inside an over-long line: drop it.
      } else if ((c.partial?.length ?? 0) + rest.length > this.#max) {
        c.partial = undefined
        c.skipping = true
        this.#events.tooLong()
      } else c.partial = c.partial ? Buffer.concat([c.partial, rest]) : Buffer.from(rest)
    }
    // The offset advances past the partial line too; the partial is kept in memory. A restart
    // while a line is half-written loses that line's head, which is why the stored position
    // is the one after the last complete line.
    if (startIdx > 0) c.complete = { dev: c.pos.dev, ino: c.pos.ino, offset: c.pos.offset + startIdx }
    c.pos.offset += chunk.length
    const current = this.#cur && this.#cur !== c ? this.#cur.complete : c.complete
    this.#events.lines(lines, { ...current })
  }

  async close(): Promise<void> {
    for (const c of [...this.#retired, ...(this.#cur ? [this.#cur] : [])]) await c.fh.close().catch(() => {})
    this.#retired = []
    this.#cur = undefined
  }
}
