/**
 * Suspicious-URI pattern lists (data files, one regex per line; see patterns/README.md).
 * All lists are combined into one case-insensitive regex so a target is tested once.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'

export const BUILTIN_PATTERN_DIR = join(import.meta.dirname, '..', '..', 'patterns')

export interface PatternList {
  name: string
  patterns: string[]
}

/** A pattern list that does not compile: names the file and line. */
export class PatternError extends Error {
  override readonly name = 'PatternError'
}

/** Read every `*.txt` list in the directories (later directories add lists; a same-named list replaces). */
export function loadPatternLists(dirs: string[], disabled: string[] = []): PatternList[] {
  const lists = new Map<string, PatternList>()
  for (const dir of dirs) {
    let files: string[]
    try {
      files = readdirSync(dir).filter((f) => f.endsWith('.txt'))
    } catch (err) {
      throw new PatternError(`pattern directory ${dir} cannot be read (${(err as NodeJS.ErrnoException).code})`)
    }
    for (const file of files.sort()) {
      const name = basename(file, '.txt')
      const text = readFileSync(join(dir, file), 'utf8')
      const patterns: string[] = []
      text.split('\n').forEach((raw, i) => {
        const line = raw.trim()
        if (line === '' || line.startsWith('#')) return
        try {
          new RegExp(line, 'i')
        } catch (err) {
          throw new PatternError(`${join(dir, file)}:${i + 1}: ${(err as Error).message}`)
        }
        patterns.push(line)
      })
      lists.set(name, { name, patterns })
    }
  }
  for (const d of disabled) lists.delete(d)
  return [...lists.values()]
}

/** One regex over every list: `test(target)` says whether a target is suspicious. */
export function compilePatterns(lists: PatternList[]): RegExp {
  const all = lists.flatMap((l) => l.patterns)
  // A regex that never matches when every list is empty or disabled.
  return all.length === 0 ? /(?!)/ : new RegExp(all.map((p) => `(?:${p})`).join('|'), 'i')
}

/**
 * Bound each list's cost: a list whose regex takes more than `maxMs` on a long probe
 * string (the 16 KiB line bound) is a catastrophic-backtracking risk, refused by doctor.
 */
export function checkPatternCost(lists: PatternList[], maxMs = 50): string[] {
  const probes = ['/'.repeat(8000), 'a/'.repeat(4000), '.'.repeat(8000), `/${'%2e'.repeat(2500)}`]
  const slow: string[] = []
  for (const list of lists) {
    for (const p of list.patterns) {
      const re = new RegExp(p, 'i')
      const start = performance.now()
      for (const probe of probes) re.test(probe)
      if (performance.now() - start > maxMs) slow.push(`${list.name}: ${p}`)
    }
  }
  return slow
}
