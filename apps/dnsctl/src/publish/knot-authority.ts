/**
 * What the publication pipeline needs from Knot: write a zone file atomically, bring knotd to
 * the new content (a transaction of the changed records, else a reload of the file), add and
 * remove zones, and wait until the authority answers with a given serial (or no longer answers
 * for a zone).
 */
import { readFile } from 'node:fs/promises'
import { setTimeout as delay } from 'node:timers/promises'
import { type PreparedFile, prepareFile, writeFileAtomic } from '../files/atomic.ts'
import { KnotControl } from '../knot/control.ts'
import { type Address, querySoa } from '../knot/dns.ts'
import type { Knotc } from '../knot/knotc.ts'
import type { Zone, ZoneRecord } from '../zonefile/index.ts'
import { compareRecords } from '../zonefile/index.ts'

/**
 * Above this many changed records (an import) a reload is as cheap as a transaction of one
 * command per record, and the zone file is what knotd should read anyway.
 */
export const MAX_TRANSACTION_RECORDS = 1000

/**
 * The records `after` removes from `before` and adds to it, or undefined when there are more
 * than `limit`. Both lists are in canonical order; a change batch keeps the untouched record
 * objects, so most steps of the walk are one identity comparison.
 */
export function recordDelta(
  before: Zone,
  after: Zone,
  limit: number,
): { remove: ZoneRecord[]; add: ZoneRecord[] } | undefined {
  const a = before.records
  const b = after.records
  const remove: ZoneRecord[] = []
  const add: ZoneRecord[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      i++
      j++
      continue
    }
    const c = i >= a.length ? 1 : j >= b.length ? -1 : compareRecords(a[i]!, b[j]!, after.origin)
    if (c === 0) {
      i++
      j++
    } else if (c < 0) remove.push(a[i++]!)
    else add.push(b[j++]!)
    if (remove.length + add.length > limit) return undefined
  }
  return { remove, add }
}

const presentation = (r: ZoneRecord) => [r.name, String(r.ttl), r.type, r.rdata]

export class VerifyError extends Error {
  override readonly name = 'VerifyError'
}

export class KnotAuthority {
  readonly knotc: Knotc
  readonly address: Address
  readonly verifyTimeoutMs: number
  readonly #control: KnotControl

  constructor(knotc: Knotc, address: Address, verifyTimeoutMs: number) {
    this.knotc = knotc
    this.address = address
    this.verifyTimeoutMs = verifyTimeoutMs
    this.#control = new KnotControl(knotc.options.socket, knotc.options.timeoutMs)
  }

  /**
   * Make knotd serve `after` where it served `before`; the zone file must already hold `after`
   * (it is what knotd reads at its next start). A few changed records go in as one zone
   * transaction; many, or any refusal of the transaction, reload the file instead, so the
   * outcome is the same either way and only the cost differs. Resolves with why it reloaded
   * (undefined after a transaction).
   */
  async update(zone: string, before: Zone, after: Zone): Promise<string | undefined> {
    const delta = recordDelta(before, after, MAX_TRANSACTION_RECORDS)
    let why = `more than ${MAX_TRANSACTION_RECORDS} records changed`
    if (delta) {
      try {
        // knotd keeps one SOA and replaces it on zone-set: the old one needs no unset.
        const remove = delta.remove.filter((r) => !(r.type === 'SOA' && r.name === after.origin))
        await this.#control.transaction(zone, remove.map(presentation), delta.add.map(presentation))
        return undefined
      } catch (err) {
        why = (err as Error).message
        // A transaction left open (a lost connection) must not stay open: it would block the reload.
        await this.knotc.run('zone-abort', zone).catch(() => {})
      }
    }
    await this.knotc.reload(zone)
    return why
  }

  async writeZoneFile(zone: string, text: string): Promise<void> {
    await writeFileAtomic(this.knotc.zoneFile(zone), text)
  }

  /** The zone file's replacement, written and fsync'd but not yet in place (see prepareFile). */
  prepareZoneFile(zone: string, text: string): Promise<PreparedFile> {
    return prepareFile(this.knotc.zoneFile(zone), text)
  }

  async readZoneFile(zone: string): Promise<string | undefined> {
    try {
      return await readFile(this.knotc.zoneFile(zone), 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw err
    }
  }

  /** The serial the authority answers with, undefined when it does not serve the zone. */
  async servedSerial(zone: string): Promise<number | undefined> {
    const answer = await querySoa(this.address, zone, Math.min(2000, this.verifyTimeoutMs))
    return answer.rcode === 'NOERROR' && answer.authoritative ? answer.serial : undefined
  }

  /** Poll the authority until `check` holds for the served serial; throws VerifyError at the deadline. */
  async waitFor(zone: string, check: (serial: number | undefined) => boolean, what: string): Promise<void> {
    const deadline = Date.now() + this.verifyTimeoutMs
    let last: string = 'no answer'
    for (;;) {
      try {
        const serial = await this.servedSerial(zone)
        if (check(serial)) return
        last = serial === undefined ? 'the zone is not served' : `serial ${serial} is served`
      } catch (err) {
        last = (err as Error).message
      }
      if (Date.now() > deadline) {
        throw new VerifyError(`the authority did not ${what} within ${this.verifyTimeoutMs} ms (${last})`)
      }
      await delay(20)
    }
  }

  waitForSerial(zone: string, serial: number): Promise<void> {
    return this.waitFor(zone, (s) => s === serial, `serve serial ${serial}`)
  }

  waitForGone(zone: string): Promise<void> {
    return this.waitFor(zone, (s) => s === undefined, 'stop serving the zone')
  }
}
