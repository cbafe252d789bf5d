/**
 * Suspicious-URI pattern lists (data files, one regex per line; see patterns/README.md).
 * All lists are combined into one case-insensitive regex over the decoded path, so a target is
 * tested once; the lists that opt in with `#@match path+query` are tested on the decoded
 * path with its query as well.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'

export const BUILTIN_PATTERN_DIR = join(import.meta.dirname, '..', '..', 'patterns')

export interface PatternList {
  name: string
  patterns: string[]
  /** Also tested against the path with its query string (traversal, injection probes). */
  withQuery: boolean
}

/** The directive line that makes a list see the query string too. */
export const WITH_QUERY_DIRECTIVE = '#@match path+query'

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
      let withQuery = false
      text.split('\n').forEach((raw, i) => {
        const line = raw.trim()
        if (line === WITH_QUERY_DIRECTIVE) withQuery = true
        if (line === '' || line.startsWith('#')) return
        try {
          new RegExp(line, 'i')
        } catch (err) {
          throw new PatternError(`${join(dir, file)}:${i + 1}: ${(err as Error).message}`)
        }
        patterns.push(line)
      })
      lists.set(name, { name, patterns, withQuery })
    }
  }
  for (const d of disabled) lists.delete(d)
  return [...lists.values()]
}

/** Says whether a request is suspicious, from its decoded path and, for some lists, its query. */
export interface SuspiciousMatcher {
  /**
   * @param path the decoded path, without query or fragment
   * @param target the decoded request target, with its query; undefined when it has none
   */
  test(path: string, target: string | undefined): boolean
}

function union(patterns: string[]): RegExp | undefined {
  return patterns.length === 0 ? undefined : new RegExp(patterns.map((p) => `(?:${p})`).join('|'), 'i')
}

/**
 * Every list over the path, so an anchored pattern (`\.env$`) is not hidden by `?x=1`; the
 * lists that opt in over the target with its query too.
 */
export function compilePatterns(lists: PatternList[]): SuspiciousMatcher {
  const onPath = union(lists.flatMap((l) => l.patterns))
  const onTarget = union(lists.filter((l) => l.withQuery).flatMap((l) => l.patterns))
  return {
    test: (path, target) =>
      (onPath?.test(path) ?? false) || (target !== undefined && (onTarget?.test(target) ?? false)),
  }
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
