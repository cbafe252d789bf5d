/**
 * Verification of a provider change at the zone's assigned authoritative nameservers: a real
 * DNS query (UDP) per changed RRset to every address of every nameserver, repeated until they
 * all answer with the new data or the deadline passes. A nameserver that still answers the old
 * data is propagation lag: reported, never rolled back.
 *
 * The queries go over a connected UDP socket (see `exchange`): a nameserver address where nothing
 * listens refuses at once instead of costing a per-query timeout, and an answer from any other
 * source address is dropped by the kernel rather than taken as the nameserver's. A nameserver
 * that refuses on every address is not lagging, it is not running: waiting out the deadline
 * cannot change that, so when only refusals are left the verification ends at once.
 */
import { lookup } from 'node:dns/promises'
import { setTimeout as delay } from 'node:timers/promises'
import dnsPacket from 'dns-packet'
import { exchange } from '../knot/dns.ts'
import { encodeCharString } from '../zonefile/charstring.ts'
import type { RecordType } from '../zonefile/index.ts'
import { absoluteName, canonicalValue } from './records.ts'

export interface ExpectedRRset {
  name: string
  type: RecordType
  /** Canonical values; empty when the RRset was deleted. */
  values: string[]
  /** Proxied records answer with the provider's edge addresses: only their presence is checked. */
  proxied: boolean
}

export interface DnsVerification {
  verified: boolean
  /** One line per nameserver and RRset that did not answer as expected at the deadline. */
  mismatches: string[]
  /** Every mismatch is a nameserver that refused the queries on all its addresses (not running). */
  refused: boolean
}

function bytes(b: unknown): Uint8Array {
  return typeof b === 'string' ? new TextEncoder().encode(b) : (b as Uint8Array)
}

/** Presentation text of one answer record (dns-packet's decoded form). */
function answerText(a: dnsPacket.Answer): string | undefined {
  const d = (a as { data: unknown }).data as never
  switch (a.type) {
    case 'A':
    case 'AAAA':
      return d
    case 'CNAME':
    case 'NS':
      return `${d}.`
    case 'MX': {
      const mx = d as { preference: number; exchange: string }
      return `${mx.preference} ${mx.exchange}.`
    }
    case 'SRV': {
      const s = d as { priority: number; weight: number; port: number; target: string }
      return `${s.priority} ${s.weight} ${s.port} ${s.target}.`
    }
    case 'TXT':
      return (Array.isArray(d) ? (d as unknown[]) : [d]).map((x) => encodeCharString(bytes(x))).join(' ')
    case 'CAA': {
      const c = d as { flags: number; tag: string; value: string }
      return `${c.flags} ${c.tag} ${encodeCharString(bytes(c.value))}`
    }
    default:
      return undefined
  }
}

async function answer(server: { host: string; port: number }, name: string, type: RecordType, timeoutMs: number) {
  const id = Math.floor(Math.random() * 65536)
  const packet = dnsPacket.encode({ type: 'query', id, flags: 0, questions: [{ type, name, class: 'IN' }] })
  const res = await exchange(server, packet, id, timeoutMs, { connect: true })
  return (res.answers ?? []).filter((a) => a.type === type && a.name.toLowerCase() === name)
}

async function addressesOf(nameserver: string): Promise<string[]> {
  const found = await lookup(nameserver, { all: true })
  return found.map((a) => a.address)
}

export async function verifyAtNameservers(
  zone: string,
  nameservers: readonly string[],
  expected: readonly ExpectedRRset[],
  options: { port: number; timeoutMs: number },
): Promise<DnsVerification> {
  if (nameservers.length === 0)
    return { verified: false, mismatches: ['the provider names no nameservers for the zone'], refused: false }
  const deadline = Date.now() + options.timeoutMs
  const perQuery = Math.max(50, Math.min(2000, options.timeoutMs))
  for (;;) {
    const mismatches: string[] = []
    let refusals = 0
    for (const ns of nameservers) {
      let addresses: string[]
      try {
        addresses = await addressesOf(ns)
      } catch (err) {
        mismatches.push(`${ns}: cannot resolve it (${(err as Error).message})`)
        continue
      }
      for (const rr of expected) {
        const name = absoluteName(rr.name, zone)
        const want = [...rr.values].sort()
        let ok = false
        let last = `${ns} has no address`
        let refusedAll = addresses.length > 0
        for (const host of addresses) {
          try {
            const got = (await answer({ host, port: options.port }, name, rr.type, perQuery))
              .map(answerText)
              .filter((t): t is string => t !== undefined)
              .map((t) => canonicalValue(rr.type, t, zone))
              .sort()
            refusedAll = false
            const match = rr.proxied ? got.length > 0 === want.length > 0 : JSON.stringify(got) === JSON.stringify(want)
            if (match) {
              ok = true
              break
            }
            last = `${ns} answers ${name} ${rr.type} with ${got.length === 0 ? 'no records' : got.join(', ')}`
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'ECONNREFUSED') refusedAll = false
            last = `${ns} did not answer ${name} ${rr.type}: ${(err as Error).message}`
          }
        }
        if (ok) continue
        mismatches.push(last)
        if (refusedAll) refusals++
      }
    }
    if (mismatches.length === 0) return { verified: true, mismatches, refused: false }
    const refused = refusals === mismatches.length
    if (refused || Date.now() >= deadline) return { verified: false, mismatches, refused }
    await delay(Math.min(250, Math.max(0, deadline - Date.now())))
  }
}
