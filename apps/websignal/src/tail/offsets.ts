/**
 * Persisted read positions, one JSON file in the state directory, replaced atomically
 * (write + rename). Positions are saved only after the lines before them were flushed to
 * the store, so a crash recounts at most one tick of lines and never skips any.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { TailPosition } from './tailer.ts'

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
      const obj = JSON.parse(text) as Record<string, TailPosition>
      const out: Record<string, TailPosition> = {}
      for (const [k, v] of Object.entries(obj)) {
        if (v && Number.isSafeInteger(v.offset) && Number.isSafeInteger(v.ino) && Number.isSafeInteger(v.dev))
          out[k] = v
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
