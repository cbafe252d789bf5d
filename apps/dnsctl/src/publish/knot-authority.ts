/**
 * What the publication pipeline needs from Knot: write a zone file atomically, reload it,
 * add and remove zones, and wait until the authority answers with a given serial (or no
 * longer answers for a zone).
 */
import { readFile } from 'node:fs/promises'
import { setTimeout as delay } from 'node:timers/promises'
import { writeFileAtomic } from '../files/atomic.ts'
import { type Address, querySoa } from '../knot/dns.ts'
import type { Knotc } from '../knot/knotc.ts'

export class VerifyError extends Error {
  override readonly name = 'VerifyError'
}

export class KnotAuthority {
  readonly knotc: Knotc
  readonly address: Address
  readonly verifyTimeoutMs: number

  constructor(knotc: Knotc, address: Address, verifyTimeoutMs: number) {
    this.knotc = knotc
    this.address = address
    this.verifyTimeoutMs = verifyTimeoutMs
  }

  async writeZoneFile(zone: string, text: string): Promise<void> {
    await writeFileAtomic(this.knotc.zoneFile(zone), text)
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
