/**
 * Compile parsed sources and the operator's allow and deny lists into the set the resolver
 * enforces. A blocked name covers its subdomains (the RPZ gets `name` and `*.name`).
 * Precedence: deny (operator) > allow (operator, or a source's `@@||name^`) > source entries.
 * An allowed name exempts itself and its subdomains; when a blocked parent would still catch it,
 * it becomes a passthru entry. Names already covered by a blocked parent are dropped, which
 * keeps the RPZ (and the resolver's memory) small.
 *
 * Names stay octets in NameSets (name-set.ts) throughout. Ancestor lookups are the hot path (a
 * million names, a few ancestors each): each name is hashed once from its end, which gives the
 * hash of every ancestor on the way, and a bit filter of the hashes of the blocked and allowed
 * names answers "certainly not there" for almost all of them. Only an ancestor the filter may
 * hold is looked up for real (a false positive costs a lookup, never a wrong answer).
 */
import { FNV_OFFSET, hashStep, NameList, NameSet } from './name-set.ts'
import type { ParsedList } from './parse.ts'

export interface CompiledBlocklist {
  /** Names blocked with their subdomains, in source order. */
  blocked: NameList
  /** Allowed names under a blocked parent: answered normally. */
  passthru: string[]
}

/**
 * A filter of name hashes: about 32 bits per name, at most 2^25 bits (4 MiB). With a million
 * names about 3% of the absent hashes read as present (then checked for real); no present hash
 * ever reads as absent.
 */
class HashFilter {
  readonly #bits: Uint32Array
  readonly #mask: number
  constructor(names: number) {
    let words = 1 << 5
    while (words < names && words < 1 << 20) words <<= 1
    this.#bits = new Uint32Array(words)
    this.#mask = words - 1
  }
  add(h: number): void {
    this.#bits[(h >>> 5) & this.#mask]! |= 1 << (h & 31)
  }
  mayHave(h: number): boolean {
    return (this.#bits[(h >>> 5) & this.#mask]! & (1 << (h & 31))) !== 0
  }
}

/**
 * Walk the name `b[s..e)` from its end. For every ancestor (the part after a dot) whose hash
 * `filter` may hold, push the dot's offset and the ancestor's hash to `hits` (farthest ancestor
 * first). Returns the name's own hash.
 */
function suffixHashes(b: Uint8Array, s: number, e: number, filter: HashFilter, hits: number[]): number {
  let h = FNV_OFFSET
  for (let i = e - 1; i >= s; i--) {
    const c = b[i]!
    if (c === 46 && filter.mayHave(h)) hits.push(i, h)
    h = hashStep(h, c)
  }
  return h
}

/** Is `name` or one of its ancestors in `set`? (the passthru check: a few names only) */
function coveredBy(name: string, set: NameSet): boolean {
  for (let at = name.indexOf('.'); at !== -1; at = name.indexOf('.', at + 1)) {
    if (set.hasString(name.slice(at + 1))) return true
  }
  return false
}

export function compileBlocklist(input: {
  sources: readonly ParsedList[]
  allow: readonly string[]
  deny: readonly string[]
}): CompiledBlocklist {
  const deny = new NameSet()
  for (const name of input.deny) deny.addString(name)
  const allow = new NameSet()
  for (const name of input.allow) if (!deny.hasString(name)) allow.addString(name)
  for (const s of input.sources) {
    for (let i = 0; i < s.allow.size; i++) {
      const at = s.allow.starts[i]!
      const end = at + s.allow.lengths[i]!
      if (deny.find(s.allow.bytes, at, end, s.allow.hashes[i]!) === -1)
        allow.add(s.allow.bytes, at, end, s.allow.hashes[i]!)
    }
  }
  const allowFilter = new HashFilter(allow.size)
  for (let i = 0; i < allow.size; i++) allowFilter.add(allow.hashes[i]!)
  // Blocked and allowed names: the second pass stops at whichever ancestor is nearest.
  let names = deny.size + allow.size
  for (const src of input.sources) names += src.block.size
  const filter = new HashFilter(names)
  for (let i = 0; i < allow.size; i++) filter.add(allow.hashes[i]!)

  const set = new NameSet()
  const hits: number[] = []
  for (const src of input.sources) {
    const { bytes, starts, lengths, hashes } = src.block
    for (let i = 0; i < src.block.size; i++) {
      const s = starts[i]!
      const e = s + lengths[i]!
      const h = hashes[i]!
      if (set.find(bytes, s, e, h) !== -1) continue
      hits.length = 0
      suffixHashes(bytes, s, e, allowFilter, hits)
      // An allowed name exempts itself and its subdomains.
      if (allowFilter.mayHave(h) && allow.find(bytes, s, e, h) !== -1) continue
      let allowed = false
      for (let k = hits.length - 2; k >= 0 && !allowed; k -= 2)
        allowed = allow.find(bytes, hits[k]! + 1, e, hits[k + 1]!) !== -1
      if (allowed) continue
      set.add(bytes, s, e, h, false, true)
      filter.add(h)
    }
  }
  for (let i = 0; i < deny.size; i++) {
    const at = deny.starts[i]!
    set.add(deny.bytes, at, at + deny.lengths[i]!, deny.hashes[i]!)
    filter.add(deny.hashes[i]!)
  }
  // Drop names a blocked ancestor already covers, unless an allowed name lies in between
  // (the nearest ancestor decides, so hits are read nearest first).
  const blocked = new Int32Array(set.size)
  let count = 0
  const { bytes, starts, lengths } = set
  for (let i = 0; i < set.size; i++) {
    const s = starts[i]!
    const e = s + lengths[i]!
    hits.length = 0
    suffixHashes(bytes, s, e, filter, hits)
    let covered = false
    for (let k = hits.length - 2; k >= 0; k -= 2) {
      const from = hits[k]! + 1
      const h = hits[k + 1]!
      if (allow.find(bytes, from, e, h) !== -1) break
      if (set.find(bytes, from, e, h) !== -1) {
        covered = true
        break
      }
    }
    if (!covered) blocked[count++] = i
  }
  const passthru: string[] = []
  for (const name of allow) if (coveredBy(name, set)) passthru.push(name)
  return { blocked: new NameList(set, blocked, count), passthru }
}
