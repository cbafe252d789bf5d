/**
 * A set of normalised domain names kept as bytes: one growing buffer holds every name's ASCII
 * octets back to back, and an open-addressing table of indexes finds them by hash. A million
 * names cost about 50 MB this way, against several hundred as JavaScript strings in a Set (each
 * string, its slice of the downloaded text and the Set's entry), and a name goes from the
 * downloaded body to the RPZ file without ever becoming a string.
 *
 * The hash is FNV-1a over the octets from the end, so walking a name from its end yields the
 * hash of each of its ancestors on the way (see compile.ts); names are in insertion order.
 */

const FNV_OFFSET = 0x811c9dc5
const FNV_PRIME = 0x01000193

/** FNV-1a over `bytes[start..end)` from the end: the hash NameSet files the name under. */
export function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let h = FNV_OFFSET
  for (let i = end - 1; i >= start; i--) h = Math.imul(h ^ bytes[i]!, FNV_PRIME)
  return h
}

/** The same hash of a string's characters (ASCII names: the same value as their octets). */
export function hashString(name: string): number {
  let h = FNV_OFFSET
  for (let i = name.length - 1; i >= 0; i--) h = Math.imul(h ^ name.charCodeAt(i), FNV_PRIME)
  return h
}

/** One step of the hash from the end: `h` of a suffix, extended by the octet `c` before it. */
export function hashStep(h: number, c: number): number {
  return Math.imul(h ^ c, FNV_PRIME)
}

export { FNV_OFFSET }

const mix = (h: number) => h ^ (h >>> 15)

export class NameSet implements Iterable<string> {
  /** Octets of every name, back to back. */
  bytes: Uint8Array = new Uint8Array(1 << 16)
  #used = 0
  starts: Int32Array = new Int32Array(1 << 10)
  lengths: Uint8Array = new Uint8Array(1 << 10)
  hashes: Int32Array = new Int32Array(1 << 10)
  size = 0
  /** Index + 1 of the name in each slot; 0 is empty. */
  #slots = new Int32Array(1 << 11)

  #grow(extraBytes: number): void {
    if (this.#used + extraBytes > this.bytes.length) {
      const bytes = new Uint8Array(Math.max(this.bytes.length * 2, this.#used + extraBytes))
      bytes.set(this.bytes.subarray(0, this.#used))
      this.bytes = bytes
    }
    if (this.size === this.starts.length) {
      const n = this.starts.length * 2
      const starts = new Int32Array(n)
      starts.set(this.starts)
      this.starts = starts
      const lengths = new Uint8Array(n)
      lengths.set(this.lengths)
      this.lengths = lengths
      const hashes = new Int32Array(n)
      hashes.set(this.hashes)
      this.hashes = hashes
    }
    if ((this.size + 1) * 2 > this.#slots.length) {
      const slots = new Int32Array(this.#slots.length * 2)
      const mask = slots.length - 1
      for (let i = 0; i < this.size; i++) {
        let s = mix(this.hashes[i]!) & mask
        while (slots[s] !== 0) s = (s + 1) & mask
        slots[s] = i + 1
      }
      this.#slots = slots
    }
  }

  /** Index of the name `bytes[start..end)` with hash `h`, or -1. */
  find(bytes: Uint8Array, start: number, end: number, h: number): number {
    const slots = this.#slots
    const mask = slots.length - 1
    const len = end - start
    for (let s = mix(h) & mask; ; s = (s + 1) & mask) {
      const slot = slots[s]!
      if (slot === 0) return -1
      const i = slot - 1
      if (this.hashes[i] === h && this.lengths[i] === len && this.#equals(i, bytes, start, len)) return i
    }
  }

  #equals(i: number, bytes: Uint8Array, start: number, len: number): boolean {
    const own = this.bytes
    const at = this.starts[i]!
    for (let k = 0; k < len; k++) if (own[at + k] !== bytes[start + k]) return false
    return true
  }

  /**
   * Add the name `bytes[start..end)` (at most 255 octets) unless it is there; `lower` folds
   * A-Z to a-z on the way in (the hash `h` must be of the folded octets); `absent` says the
   * caller has just looked it up. Returns its index when added, -1 when it was there.
   */
  add(bytes: Uint8Array, start: number, end: number, h: number, lower = false, absent = false): number {
    const len = end - start
    if (!lower && !absent && this.find(bytes, start, end, h) !== -1) return -1
    this.#grow(len)
    const at = this.#used
    const own = this.bytes
    if (lower) {
      for (let k = 0; k < len; k++) {
        const c = bytes[start + k]!
        own[at + k] = c >= 65 && c <= 90 ? c + 32 : c
      }
      if (this.find(own, at, at + len, h) !== -1) return -1
    } else own.set(bytes.subarray(start, end), at)
    const i = this.size++
    this.#used += len
    this.starts[i] = at
    this.lengths[i] = len
    this.hashes[i] = h
    const mask = this.#slots.length - 1
    let s = mix(h) & mask
    while (this.#slots[s] !== 0) s = (s + 1) & mask
    this.#slots[s] = i + 1
    return i
  }

  addString(name: string): number {
    const bytes = Buffer.from(name, 'latin1')
    return this.add(bytes, 0, bytes.length, hashBytes(bytes, 0, bytes.length))
  }

  hasString(name: string): boolean {
    const bytes = Buffer.from(name, 'latin1')
    return this.find(bytes, 0, bytes.length, hashBytes(bytes, 0, bytes.length)) !== -1
  }

  name(i: number): string {
    const at = this.starts[i]!
    return Buffer.from(this.bytes.buffer, this.bytes.byteOffset + at, this.lengths[i]!).toString('latin1')
  }

  *[Symbol.iterator](): Iterator<string> {
    for (let i = 0; i < this.size; i++) yield this.name(i)
  }
}

/** Some of a NameSet's names (by index, in order): the compiled list. */
export class NameList implements Iterable<string> {
  readonly set: NameSet
  readonly indexes: Int32Array
  readonly size: number
  constructor(set: NameSet, indexes: Int32Array, size: number) {
    this.set = set
    this.indexes = indexes
    this.size = size
  }

  *[Symbol.iterator](): Iterator<string> {
    for (let k = 0; k < this.size; k++) yield this.set.name(this.indexes[k]!)
  }
}
