/**
 * Compile parsed sources and the operator's allow and deny lists into the set the resolver
 * enforces. A blocked name covers its subdomains (the RPZ gets `name` and `*.name`).
 * Precedence: deny (operator) > allow (operator, or a source's `@@||name^`) > source entries.
 * An allowed name exempts itself and its subdomains; when a blocked parent would still catch it,
 * it becomes a passthru entry. Names already covered by a blocked parent are dropped, which
 * keeps the RPZ (and the resolver's memory) small.
 *
 * Ancestor lookups are the hot path (a million names, a few ancestors each): instead of slicing
 * every ancestor out of its name to look it up, each name is hashed once from its end, which
 * gives the hash of every ancestor on the way, and a bit filter of the hashes of the blocked and
 * allowed names answers "certainly not there" for almost all of them. Only an ancestor the filter
 * may hold is sliced and looked up for real (a false positive costs a lookup, never a wrong answer).
 */
import type { ParsedList } from './parse.ts'

export interface CompiledBlocklist {
  /** Names blocked with their subdomains, in source order. */
  blocked: string[]
  /** Allowed names under a blocked parent: answered normally. */
  passthru: string[]
}

/**
 * A filter of name hashes: 2^25 bits (4 MiB). With a million names about 3% of the absent
 * hashes read as present (then checked for real); no present hash ever reads as absent.
 */
class HashFilter {
  readonly #bits = new Uint32Array(1 << 20)
  add(h: number): void {
    this.#bits[(h >>> 5) & 0xfffff]! |= 1 << (h & 31)
  }
  mayHave(h: number): boolean {
    return (this.#bits[(h >>> 5) & 0xfffff]! & (1 << (h & 31))) !== 0
  }
}

/** FNV-1a over the characters from the end: `name`'s hash as `suffixHashes` computes it. */
function nameHash(name: string): number {
  let h = 0x811c9dc5
  for (let i = name.length - 1; i >= 0; i--) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193)
  return h
}

/**
 * Walk `name` from its end. For every ancestor (the part after a dot) whose hash `filter` may
 * hold, push the dot's index to `hits` (farthest ancestor first). Returns the name's own hash.
 */
function suffixHashes(name: string, filter: HashFilter, hits: number[]): number {
  let h = 0x811c9dc5
  for (let i = name.length - 1; i >= 0; i--) {
    const c = name.charCodeAt(i)
    if (c === 46 && filter.mayHave(h)) hits.push(i)
    h = Math.imul(h ^ c, 0x01000193)
  }
  return h
}

/** Is `name` or one of its ancestors in `set`? (the passthru check: a few names only) */
function coveredBy(name: string, set: Set<string>): boolean {
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
  const allowFilter = new HashFilter()
  for (const name of allow) allowFilter.add(nameHash(name))
  // Blocked and allowed names: the second pass stops at whichever ancestor is nearest.
  const filter = new HashFilter()
  for (const name of allow) filter.add(nameHash(name))

  const set = new Set<string>()
  const hits: number[] = []
  for (const s of input.sources) {
    for (const name of s.block) {
      if (set.has(name)) continue
      hits.length = 0
      const h = suffixHashes(name, allowFilter, hits)
      // An allowed name exempts itself and its subdomains.
      if (allowFilter.mayHave(h) && allow.has(name)) continue
      let allowed = false
      for (let k = hits.length - 1; k >= 0 && !allowed; k--) allowed = allow.has(name.slice(hits[k]! + 1))
      if (allowed) continue
      set.add(name)
      filter.add(h)
    }
  }
  for (const name of deny) {
    set.add(name)
    filter.add(nameHash(name))
  }
  // Drop names a blocked ancestor already covers, unless an allowed name lies in between
  // (the nearest ancestor decides, so hits are read nearest first).
  const blocked: string[] = []
  for (const name of set) {
    hits.length = 0
    suffixHashes(name, filter, hits)
    let covered = false
    for (let k = hits.length - 1; k >= 0; k--) {
      const ancestor = name.slice(hits[k]! + 1)
      if (allow.has(ancestor)) break
      if (set.has(ancestor)) {
        covered = true
        break
      }
    }
    if (!covered) blocked.push(name)
  }
  const passthru: string[] = []
  for (const name of allow) if (coveredBy(name, set)) passthru.push(name)
  return { blocked, passthru }
}
