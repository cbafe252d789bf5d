/**
 * A small file poller of our own (the common npm tail library leaks listeners on Node 24):
 * stat by inode and size every interval, read from the stored offset, split lines.
 *
 * - First start without a stored offset: from the end of the file.
 * - Rename rotation (inode changes): the new file is read from 0, and the old one stays open
 *   and is read alongside it until it has not grown for `rotatedGraceMs`. A server keeps
 *   writing to the renamed file until it reopens its log (nginx after `USR1`, Apache after a
 *   graceful restart), so its last lines arrive after the new file appears. Nothing is lost.
 *   The position handed out names the old file too (device, inode, offset, and its new name
 *   when found beside the path: `access.log.1`), so a restart in those seconds finds it again
 *   and reads on where it stopped; a file stored as current but rotated away while the agent
 *   was down is looked for the same way. One not found is reported (`lost`). A rotated-away
 *   file renamed back to the path (while running or while the agent was down) becomes the
 *   current file again and is read on where it stood, not from 0.
 * - Copytruncate / truncation (size below our offset, or the file's first bytes changed:
 *   it was truncated and written past our offset between two polls): read again from 0 and
 *   count a truncation. Lines written between the copy and the truncate are lost
 *   (unavoidable with copytruncate; documented).
 * - A missing file: wait for it, then read from 0. Deletion: the open descriptor is read
 *   like a rotated file's, while the path is waited for.
 * - Lines longer than `maxLineBytes` are cut off and reported as too long.
 * Each switch of file (rotation, truncation, reappearance) counts as a restart.
 */
import { createHash } from 'node:crypto'
import type { Stats } from 'node:fs'
import { type FileHandle, open, readdir, stat } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

/** Where reading stands in one file, named by device and inode (a rename keeps them). */
export interface FilePosition {
  dev: number
  ino: number
  offset: number
  /**
   * SHA-256 (hex, first 16 characters) of the file's first `headLength` bytes, to tell the file
   * from another that got its inode after it was removed. Never the bytes themselves: they are
   * log content.
   */
  head?: string
  headLength?: number
}

/** A rotated-away file still read when the position was taken. */
export interface DrainingPosition extends FilePosition {
  /** Its name after the rename, when found beside the path; absent when deleted or moved away. */
  path?: string
}

export interface TailPosition extends FilePosition {
  /** Rotated-away files still being read (a restart reads them on). */
  draining?: DrainingPosition[]
}

/** A rotated-away file a restart should have read on, but which is no longer there. */
export interface LostFile {
  /** Its name after the rename, when it was known. */
  path: string | undefined
  /** Where reading stood in it: what was written past this is not read. */
  offset: number
  /** `gone`: not found; `replaced`: its inode now holds another file. */
  reason: 'gone' | 'replaced'
}

export interface TailEvents {
  /**
   * Lines read in one batch, and the position to resume from: after the last complete line of
   * the current file, and of each rotated-away file still read. Also called without lines when
   * the files read change (a rotation, a drained file closed).
   */
  lines(lines: string[], position: TailPosition): void
  /** A line over the bound was dropped. */
  tooLong(): void
  /** The tailer switched files (rotation, truncation, reappearance). */
  restart(reason: 'rotated' | 'truncated' | 'reappeared'): void
  /** At the first poll: a rotated-away file of the stored position cannot be read on. */
  lost?(file: LostFile): void
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
  /** `head`'s fingerprint for the stored position. */
  headHash: string | undefined
  /** For a rotated-away file: when it last grew. */
  grewAt: number
  /** For a rotated-away file: its name after the rename, when found. */
  path: string | undefined
}

/** A cursor at `pos`, nothing read yet. */
function newCursor(fh: FileHandle, pos: TailPosition, grewAt: number, path: string | undefined): Cursor {
  return {
    fh,
    pos,
    complete: { ...pos },
    partial: undefined,
    skipping: false,
    head: undefined,
    headHash: undefined,
    grewAt,
    path,
  }
}

function fingerprint(head: Buffer): string {
  return createHash('sha256').update(head).digest('hex').slice(0, 16)
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
    if (first && this.#start) await this.#resumeRotated(this.#start, st)
    /** The files read changed: the position says so even if no line comes. */
    let moved = false
    const cur = this.#cur
    if (cur) {
      if (!st || st.ino !== cur.pos.ino || st.dev !== cur.pos.dev) {
        // Rotated or deleted: the old file is read to its end now and kept open for late writes.
        await this.#drain(cur)
        await this.#rememberHead(cur)
        cur.grewAt = this.#now()
        cur.path = await this.#findRenamed(cur.pos, undefined)
        this.#retired.push(cur)
        this.#cur = undefined
        if (st) {
          if (!this.#takeBack(st)) await this.#openAt(st, 0)
          this.#events.restart('rotated')
        }
        moved = true
      } else if (st.size < cur.pos.offset || (await this.#headChanged(cur))) {
        cur.partial = undefined
        cur.head = undefined
        cur.headHash = undefined
        cur.skipping = false
        cur.pos.offset = 0
        cur.complete = { ...cur.pos }
        this.#events.restart('truncated')
      }
    } else if (st) {
      const s = this.#start
      this.#start = undefined
      if (this.#takeBack(st)) {
        // A rotated-away file still read is back at the path (renamed back, or the path had
        // been moved away): read on where it stood, not from 0.
        this.#events.restart(s ? 'rotated' : 'reappeared')
        moved = true
      } else if (s && s.ino === st.ino && s.dev === st.dev && s.offset <= st.size) {
        await this.#openAt(st, s.offset)
        const c = this.#cur!
        if (!(await this.#headIs(c.fh, s))) {
          // Truncated and written again while we were down (or another file got the inode).
          c.pos.offset = 0
          c.complete = { ...c.pos }
          this.#events.restart('truncated')
        }
      } else if (s) {
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
    if (await this.#drainRetired()) moved = true
    if (this.#cur) {
      this.state = 'reading'
      await this.#drain(this.#cur)
      await this.#rememberHead(this.#cur)
    } else this.state = 'waiting'
    if (moved && (this.#cur || this.#retired.length > 0)) this.#events.lines([], this.#position())
  }

  /** The position to resume from: the current file (else the last rotated away) and the files still drained. */
  #position(): TailPosition {
    const main = this.#cur ?? this.#retired.at(-1)
    if (!main) throw new TypeError('no file to take a position of')
    const at = (c: Cursor): FilePosition => ({
      ...c.complete,
      ...(c.headHash === undefined ? {} : { head: c.headHash, headLength: c.head!.length }),
    })
    const draining = this.#retired
      .filter((c) => c !== main)
      .map((c): DrainingPosition => ({ ...at(c), ...(c.path === undefined ? {} : { path: c.path }) }))
    return { ...at(main), ...(draining.length > 0 ? { draining } : {}) }
  }

  /**
   * First poll after a restart: open again the rotated-away files the stored position was still
   * reading, and the stored current file if it was rotated away while the agent was down, and
   * read them on from where they stood. They are found by device and inode, under their name
   * after the rename or beside the path; their first bytes must be those remembered.
   */
  async #resumeRotated(start: TailPosition, st: Stats | undefined): Promise<void> {
    const atPath = (p: FilePosition) => st !== undefined && st.ino === p.ino && st.dev === p.dev
    const wanted: DrainingPosition[] = [...(start.draining ?? [])]
    // Rotated away while the agent was down: read on as a rotated file (the file now at the
    // path is a new one, read from its start by the first poll).
    if (!atPath(start)) wanted.push(start)
    // The stored current file, still at the path, is read on by the first poll itself.
    const seen = new Set<string>(atPath(start) ? [`${start.dev}:${start.ino}`] : [])
    for (const w of wanted) {
      const id = `${w.dev}:${w.ino}`
      if (seen.has(id)) continue
      seen.add(id)
      // A file that was being drained and is back at the path (renamed back while the agent was
      // down) is opened here, checked like any rotated one, and the first poll reads on in it
      // as the current file: read from 0 as a new file, its lines would count twice.
      const path = atPath(w) ? this.path : await this.#findRenamed(w, w.path)
      const opened = path === undefined ? undefined : await this.#openRotated(path, w)
      if (opened === 'replaced' || opened === undefined) {
        this.#events.lost?.({ path: path ?? w.path, offset: w.offset, reason: opened ?? 'gone' })
        continue
      }
      this.#retired.push(opened)
    }
    if (this.#retired.length > 0) this.#events.lines([], this.#position())
  }

  /** Open a rotated file found again at `path`, checked against its stored position. */
  async #openRotated(path: string, w: FilePosition): Promise<Cursor | 'replaced' | undefined> {
    let fh: FileHandle
    try {
      fh = await open(path, 'r')
    } catch {
      return undefined
    }
    const real = await fh.stat()
    const same = real.ino === w.ino && real.dev === w.dev && real.size >= w.offset && (await this.#headIs(fh, w))
    if (!same) {
      await fh.close().catch(() => {})
      return real.ino === w.ino && real.dev === w.dev ? 'replaced' : undefined
    }
    const pos = { dev: w.dev, ino: w.ino, offset: w.offset }
    const c = newCursor(fh, pos, this.#now(), path)
    await this.#rememberHead(c)
    return c
  }

  /**
   * Where a rotated file is now: `hint` (its name when last seen), else an entry beside the path
   * whose name starts with the path's (`access.log.1`, `access.log-20261125`) and that has its
   * device and inode. Undefined when none has (deleted, compressed, moved elsewhere).
   */
  async #findRenamed(p: FilePosition, hint: string | undefined): Promise<string | undefined> {
    const same = async (candidate: string) => {
      try {
        const s = await stat(candidate)
        return s.isFile() && s.ino === p.ino && s.dev === p.dev
      } catch {
        return false
      }
    }
    const dir = dirname(this.path)
    const base = basename(this.path)
    const candidates = [...(hint === undefined ? [] : [hint]), `${this.path}.1`]
    try {
      for (const name of (await readdir(dir)).sort()) {
        if (name !== base && name.startsWith(base)) candidates.push(join(dir, name))
      }
    } catch {
      // An unreadable directory: only the hint and the usual name are tried.
    }
    for (const c of new Set(candidates)) if (await same(c)) return c
    return undefined
  }

  /**
   * When the file now at the path (`st`) is one of the rotated-away files still read, make it the
   * current file again, where reading stood in it. True when it was one.
   */
  #takeBack(st: Stats): boolean {
    const i = this.#retired.findIndex((c) => c.pos.ino === st.ino && c.pos.dev === st.dev)
    if (i === -1) return false
    const [c] = this.#retired.splice(i, 1)
    c!.path = undefined
    this.#cur = c
    return true
  }

  /** Read what rotated-away files gained; close those that stopped growing. True when one was closed. */
  async #drainRetired(): Promise<boolean> {
    if (this.#retired.length === 0) return false
    const now = this.#now()
    const kept: Cursor[] = []
    for (const c of this.#retired) {
      if ((await this.#drain(c)) > 0) c.grewAt = now
      await this.#rememberHead(c)
      if (now - c.grewAt >= this.#graceMs) await c.fh.close().catch(() => {})
      else kept.push(c)
    }
    const closed = kept.length < this.#retired.length
    this.#retired = kept
    return closed
  }

  /** Whether an open file starts with the bytes a stored position remembers (true when it remembers none). */
  async #headIs(fh: FileHandle, p: FilePosition): Promise<boolean> {
    if (p.head === undefined || p.headLength === undefined) return true
    const head = Buffer.alloc(p.headLength)
    const { bytesRead } = await fh.read(head, 0, head.length, 0)
    return bytesRead === head.length && fingerprint(head) === p.head
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
    c.headHash = c.head.length > 0 ? fingerprint(c.head) : undefined
  }

  async #openAt(st: { ino: number; dev: number }, offset: number): Promise<void> {
    const fh = await open(this.path, 'r')
    const real = await fh.stat()
    // The path may have been replaced between stat and open: trust the descriptor.
    const pos = { dev: real.dev, ino: real.ino, offset: real.ino === st.ino ? offset : 0 }
    this.#cur = newCursor(fh, pos, 0, undefined)
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
    // The first bytes go with the position handed out now (a restart checks them).
    const known = c.head?.length ?? 0
    if (known < HEAD_BYTES && known === c.pos.offset) {
      c.head = Buffer.concat([c.head ?? Buffer.alloc(0), chunk.subarray(0, HEAD_BYTES - known)])
      c.headHash = fingerprint(c.head)
    }
    c.pos.offset += chunk.length
    this.#events.lines(lines, this.#position())
  }

  async close(): Promise<void> {
    for (const c of [...this.#retired, ...(this.#cur ? [this.#cur] : [])]) await c.fh.close().catch(() => {})
    this.#retired = []
    this.#cur = undefined
  }
}
