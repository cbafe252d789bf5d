/**
 * Persisted read positions, one JSON file in the state directory, replaced atomically
 * (write + rename). Positions are saved only after the lines before them were flushed to
 * the store, so a crash recounts at most one tick of lines and never skips any. Per input:
 * `{dev, ino, offset, head?, headLength?, draining?: [{dev, ino, offset, head?, headLength?, path?}]}`,
 * `draining` being the rotated-away files still read.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { DrainingPosition, FilePosition, TailPosition } from './tailer.ts'

/** A stored file position, or undefined when it is not one (an older or damaged file). */
function filePosition(v: unknown): FilePosition | undefined {
  const p = v as Partial<FilePosition> | null
  if (!p || !Number.isSafeInteger(p.offset) || !Number.isSafeInteger(p.ino) || !Number.isSafeInteger(p.dev)) return
  const head =
    typeof p.head === 'string' && Number.isSafeInteger(p.headLength) ? { head: p.head, headLength: p.headLength! } : {}
  return { dev: p.dev!, ino: p.ino!, offset: p.offset!, ...head }
}

function tailPosition(v: unknown): TailPosition | undefined {
  const main = filePosition(v)
  if (!main) return
  const raw = (v as { draining?: unknown }).draining
  const draining: DrainingPosition[] = []
  for (const d of Array.isArray(raw) ? raw : []) {
    const p = filePosition(d)
    const path = (d as { path?: unknown }).path
    if (p) draining.push({ ...p, ...(typeof path === 'string' ? { path } : {}) })
  }
  return draining.length > 0 ? { ...main, draining } : main
}

export class OffsetFile {
  readonly path: string
  #saved = ''

  constructor(stateDir: string) {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 })
    this.path = join(stateDir, 'offsets.json')
  }

  load(): Record<string, TailPosition> {
    let text: string
    try {
      text = readFileSync(this.path, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {}
      throw err
    }
    try {
      const obj = JSON.parse(text) as Record<string, unknown>
      const out: Record<string, TailPosition> = {}
      for (const [k, v] of Object.entries(obj)) {
        const p = tailPosition(v)
        if (p) out[k] = p
      }
      this.#saved = text
      return out
    } catch {
      // A damaged file (disk full mid-write is prevented by the rename) is treated as absent.
      return {}
    }
  }

  save(positions: Record<string, TailPosition>): void {
    const text = JSON.stringify(positions)
    if (text === this.#saved) return
    const tmp = `${this.path}.tmp`
    writeFileSync(tmp, text, { mode: 0o600 })
    renameSync(tmp, this.path)
    this.#saved = text
  }
}
