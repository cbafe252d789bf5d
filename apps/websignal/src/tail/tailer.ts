/**
 * A small file poller of our own (the common npm tail library leaks listeners on Node 24):
 * stat by inode and size every interval, read from the stored offset, split lines.
 *
 * - First start without a stored offset: from the end of the file.
 * - Rename rotation (inode changes): the old file is read to its end through the open
 *   descriptor, then the new file from 0. Nothing is lost.
 * - Copytruncate / truncation (size below our offset, or the file's first bytes changed:
 *   it was truncated and written past our offset between two polls): read again from 0 and
 *   count a truncation. Lines written between the copy and the truncate are lost
 *   (unavoidable with copytruncate; documented).
 * - A missing file: wait for it, then read from 0. Deletion: drain the open descriptor,
 *   then wait for the path to come back.
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
  /** Lines read in one batch, and the position after the last complete line. */
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
}

export type TailState = 'waiting' | 'reading' | 'failed'

/** How many of a file's first bytes are remembered to notice it was truncated and refilled. */
const HEAD_BYTES = 64

export class Tailer {
  readonly path: string
  state: TailState = 'waiting'
  /** Last error that kept the input from starting (permission denied, not a file). */
  error: string | undefined
  readonly #events: TailEvents
  readonly #max: number
  readonly #buf: Buffer
  #fh: FileHandle | undefined
  #pos: TailPosition | undefined
  #start: TailPosition | undefined
  #partial: Buffer | undefined
  #skipping = false
  #first = true
  /** The open file's first bytes as read (up to HEAD_BYTES). */
  #head: Buffer | undefined

  constructor(options: TailerOptions, events: TailEvents) {
    this.path = options.path
    this.#events = events
    this.#max = options.maxLineBytes
    this.#start = options.start
    this.#buf = Buffer.allocUnsafe(options.chunkBytes ?? 1024 * 1024)
  }

  /** Whether the input has started: its file is open, or it is waiting for a file that does not exist yet. */
  get started(): boolean {
    return this.state !== 'failed'
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
    if (this.#fh && this.#pos) {
      if (!st || st.ino !== this.#pos.ino || st.dev !== this.#pos.dev) {
        // Rotated or deleted: finish the old file through the open descriptor.
        await this.#drain()
        await this.#close()
        if (!st) {
          this.state = 'waiting'
          return
        }
        await this.#openAt(st, 0)
        this.#events.restart('rotated')
      } else if (st.size < this.#pos.offset || (await this.#headChanged())) {
        this.#partial = undefined
        this.#head = undefined
        this.#skipping = false
        this.#pos = { ...this.#pos, offset: 0 }
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
    } else {
      this.state = 'waiting'
      return
    }
    this.error = undefined
    await this.#drain()
    await this.#rememberHead()
  }

  /** Whether the open file's first bytes differ from those remembered (truncated and refilled). */
  async #headChanged(): Promise<boolean> {
    const head = this.#head
    if (!this.#fh || !head || head.length === 0) return false
    const now = Buffer.alloc(head.length)
    const { bytesRead } = await this.#fh.read(now, 0, head.length, 0)
    return bytesRead < head.length || !now.equals(head)
  }

  /** Remember the file's first bytes until HEAD_BYTES of them exist. */
  async #rememberHead(): Promise<void> {
    if (!this.#fh || !this.#pos || (this.#head?.length ?? 0) >= HEAD_BYTES) return
    const want = Math.min(HEAD_BYTES, this.#pos.offset)
    if (want <= (this.#head?.length ?? 0)) return
    const buf = Buffer.alloc(want)
    const { bytesRead } = await this.#fh.read(buf, 0, want, 0)
    this.#head = buf.subarray(0, bytesRead)
  }

  async #openAt(st: { ino: number; dev: number }, offset: number): Promise<void> {
    this.#fh = await open(this.path, 'r')
    const real = await this.#fh.stat()
    // The path may have been replaced between stat and open: trust the descriptor.
    this.#pos =
      real.ino === st.ino ? { dev: real.dev, ino: real.ino, offset } : { dev: real.dev, ino: real.ino, offset: 0 }
    this.#partial = undefined
    this.#skipping = false
    this.#head = undefined
    this.state = 'reading'
  }

  async #close(): Promise<void> {
    await this.#fh?.close().catch(() => {})
    this.#fh = undefined
    this.#pos = undefined
    this.#head = undefined
  }

  /** Read to the current end of the open file. */
  async #drain(): Promise<void> {
    const fh = this.#fh
    const pos = this.#pos
    if (!fh || !pos) return
    for (;;) {
      const { bytesRead } = await fh.read(this.#buf, 0, this.#buf.length, pos.offset)
      if (bytesRead === 0) return
      this.#split(this.#buf.subarray(0, bytesRead), pos)
      if (bytesRead < this.#buf.length) return
    }
  }

  #split(chunk: Buffer, pos: TailPosition): void {
    const lines: string[] = []
    let startIdx = 0
    let consumed = pos.offset
    for (;;) {
      const nl = chunk.indexOf(10, startIdx)
      if (nl === -1) break
      if (this.#skipping) this.#skipping = false
      else {
        const head = this.#partial
        const len = (head?.length ?? 0) + nl - startIdx
        if (len > this.#max) this.#events.tooLong()
        else {
          const body = head ? Buffer.concat([head, chunk.subarray(startIdx, nl)]) : chunk.subarray(startIdx, nl)
          let end = body.length
          if (end > 0 && body[end - 1] === 13) end--
          if (end > 0) lines.push(body.toString('utf8', 0, end))
        }
      }
      this.#partial = undefined
      startIdx = nl + 1
    }
    consumed += startIdx
    if (startIdx < chunk.length) {
      const rest = chunk.subarray(startIdx)
      if (this.#skipping) {
        // Still inside an over-long line: drop it.
      } else if ((this.#partial?.length ?? 0) + rest.length > this.#max) {
        this.#partial = undefined
        this.#skipping = true
        this.#events.tooLong()
      } else this.#partial = this.#partial ? Buffer.concat([this.#partial, rest]) : Buffer.from(rest)
    }
    // The offset advances past the partial line too; the partial is kept in memory. A restart
    // while a line is half-written loses that line's head, which is why the stored position
    // is the one after the last complete line.
    const complete = { dev: pos.dev, ino: pos.ino, offset: consumed }
    pos.offset += chunk.length
    this.#events.lines(lines, complete)
  }

  async close(): Promise<void> {
    await this.#close()
  }
}
