/**
 * Compile parsed sources and the operator's allow and deny lists into the set the resolver
 * enforces. A blocked name covers its subdomains (the RPZ gets `name` and `*.name`).
 * Precedence: deny (operator) > allow (operator, or a source's `@@||name^`) > source entries.
 * An allowed name exempts itself and its subdomains; when a blocked parent would still catch it,
 * it becomes a passthru entry. Names already covered by a blocked parent are dropped, which
 * keeps the RPZ (and the resolver's memory) small.
 */
import type { ParsedList } from './parse.ts'

export interface CompiledBlocklist {
  /** Names blocked with their subdomains, in source order. */
  blocked: string[]
  /** Allowed names under a blocked parent: answered normally. */
  passthru: string[]
}

/** Is `name` (when `includeSelf`) or one of its ancestors in `set`? */
function coveredBy(name: string, set: Set<string>, includeSelf: boolean): boolean {
  if (includeSelf && set.has(name)) return true
  for (let at = name.indexOf('.'); at !== -1; at = name.indexOf('.', at + 1)) {
    if (set.has(name.slice(at + 1))) return true
  }
  return false
}

export function compileBlocklist(input: {
  sources: readonly ParsedList[]
  allow: readonly string[]
  deny: readonly string[]
}): CompiledBlocklist {
  const deny = new Set(input.deny)
  const allow = new Set<string>()
  for (const name of input.allow) if (!deny.has(name)) allow.add(name)
  for (const s of input.sources) for (const name of s.allow) if (!deny.has(name)) allow.add(name)
  const set = new Set<string>()
  for (const s of input.sources) {
    for (const name of s.block) {
      if (!set.has(name) && (allow.size === 0 || !coveredBy(name, allow, true))) set.add(name)
    }
  }
  for (const name of deny) set.add(name)
  // Drop names a blocked ancestor already covers, unless an allowed name lies in between.
  const blocked: string[] = []
  for (const name of set) {
    let covered = false
    let at = name.indexOf('.')
    while (at !== -1) {
      const ancestor = name.slice(at + 1)
      if (allow.has(ancestor)) break
      if (set.has(ancestor)) {
        covered = true
        break
      }
      at = name.indexOf('.', at + 1)
    }
    if (!covered) blocked.push(name)
  }
  const passthru: string[] = []
  for (const name of allow) if (coveredBy(name, set, false)) passthru.push(name)
  return { blocked, passthru }
}
