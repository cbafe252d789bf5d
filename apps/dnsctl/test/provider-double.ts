/**
 * A Cloudflare-style DNS records API double, run by the tests as a real HTTPS server (testkit
 * CA), in the spirit of octoDNS's and DNSControl's provider tests: zones, paged records, the
 * atomic batch endpoint, token permissions, and faults (a delete failing halfway through a
 * non-atomic batch, a slow API, a batch that answers success but drops its creates). After each
 * write it publishes the zone to a real knotd, the zone's "assigned nameserver", unless
 * publishing is switched off (propagation lag).
 */
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import { join } from 'node:path'
import type { Knot, TestCa } from '@gatehouse/testkit'
import type { ApiRecord } from '../src/provider/records.ts'

export type Permission = 'zone:read' | 'dns:read' | 'dns:edit'

/** The double stores records the way the API answers them. */
export type DoubleRecord = ApiRecord

export interface DoubleZone {
  id: string
  name: string
  name_servers: string[]
  records: DoubleRecord[]
}

export interface Faults {
  /** Every answer waits this long first. */
  delayMs?: number
  /** The batch turns non-atomic and fails (500) at this delete (1-based), the earlier ones applied. */
  failDeleteAt?: number
  /** The next batch answers success but its posts are dropped. */
  dropPosts?: boolean
  /** The next this-many requests have their connection closed without an answer. */
  resets?: number
  /** The same for the next this-many POSTs (writes) only. */
  writeResets?: number
}

export interface ProviderDouble {
  url: string
  zones: Map<string, DoubleZone>
  tokens: Map<string, Set<Permission>>
  faults: Faults
  /** Requests by kind: zones, records, batch. */
  calls: Record<string, number>
  publishing: boolean
  addZone(name: string, records: Omit<DoubleRecord, 'id'>[], nameServers: string[]): Promise<DoubleZone>
  close(): Promise<void>
}

export function newId(): string {
  return randomBytes(16).toString('hex')
}

function present(r: DoubleRecord): string {
  const d = r.data ?? {}
  switch (r.type) {
    case 'CNAME':
    case 'NS':
      return `${r.content}.`
    case 'MX':
      return `${r.priority} ${r.content}.`
    case 'SRV':
      return `${d.priority} ${d.weight} ${d.port} ${d.target}.`
    case 'CAA':
      return `${d.flags} ${d.tag} "${d.value}"`
    default:
      return r.content ?? ''
  }
}

function zoneText(z: DoubleZone, serial: number): string {
  const lines = [
    `$ORIGIN ${z.name}.`,
    `@ 300 IN SOA ns1.provider.test. hostmaster.provider.test. ${serial} 3600 900 604800 300`,
  ]
  for (const r of z.records) lines.push(`${r.name}. ${r.ttl === 1 ? 300 : r.ttl} IN ${r.type} ${present(r)}`)
  return `${lines.join('\n')}\n`
}

export async function startProviderDouble(ca: TestCa, knot: Knot): Promise<ProviderDouble> {
  const cert = ca.issueServer(['localhost', '127.0.0.1'])
  const zones = new Map<string, DoubleZone>()
  const tokens = new Map<string, Set<Permission>>()
  const calls: Record<string, number> = { zones: 0, records: 0, batch: 0 }
  let serial = 1
  const served = new Set<string>()
  const double: ProviderDouble = {
    url: '',
    zones,
    tokens,
    faults: {},
    calls,
    publishing: true,
    async addZone(name, records, nameServers) {
      const zone = {
        id: newId(),
        name,
        name_servers: nameServers,
        records: records.map((r) => ({ ...r, id: newId() })),
      }
      zones.set(name, zone)
      if (served.has(name)) await publish(zone)
      else await knot.addZone(name, zoneText(zone, serial))
      served.add(name)
      return zone
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
  async function publish(zone: DoubleZone) {
    if (!double.publishing) return
    serial++
    writeFileSync(join(knot.zonesDir, `${zone.name}.zone`), zoneText(zone, serial))
    await knot.knotc('-b', 'zone-reload', zone.name)
  }

  const server: Server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    let body = ''
    req.on('data', (c) => {
      body += c
    })
    req.on('end', async () => {
      const write = req.method === 'POST' && (double.faults.writeResets ?? 0) > 0
      if (double.faults.resets || write) {
        if (write) double.faults.writeResets!--
        else double.faults.resets!--
        double.calls.reset = (double.calls.reset ?? 0) + 1
        req.socket.destroy()
        return
      }
      if (double.faults.delayMs) await new Promise((r) => setTimeout(r, double.faults.delayMs))
      const send = (status: number, payload: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(JSON.stringify(payload))
      }
      const fail = (status: number, code: number, message: string) =>
        send(status, { success: false, errors: [{ code, message }], messages: [], result: null })
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1]
      const perms = token ? tokens.get(token) : undefined
      if (!perms) return fail(401, 9106, 'Missing X-Auth-Key, X-Auth-Email or Authorization headers')
      const url = new URL(req.url ?? '/', 'https://double')
      const path = url.pathname.replace(/^\/client\/v4/, '')
      const records = /^\/zones\/([^/]+)\/dns_records$/.exec(path)
      const batchPath = /^\/zones\/([^/]+)\/dns_records\/batch$/.exec(path)
      if (req.method === 'GET' && path === '/zones') {
        calls.zones!++
        if (!perms.has('zone:read')) return fail(403, 9109, 'Unauthorized to access requested resource')
        const name = url.searchParams.get('name')
        const result = [...zones.values()]
          .filter((z) => !name || z.name === name)
          .map((z) => ({ id: z.id, name: z.name, name_servers: z.name_servers, status: 'active' }))
        return send(200, { success: true, errors: [], result, result_info: { page: 1, total_pages: 1 } })
      }
      const zone = (id: string) => [...zones.values()].find((z) => z.id === id)
      if (req.method === 'GET' && records) {
        calls.records!++
        const z = zone(records[1]!)
        if (!z) return fail(404, 7003, 'Could not route to /zones/..., perhaps your object identifier is invalid?')
        if (!perms.has('dns:read')) return fail(403, 10000, 'Authentication error')
        const perPage = Number(url.searchParams.get('per_page') ?? 100)
        const page = Number(url.searchParams.get('page') ?? 1)
        const result = z.records.slice((page - 1) * perPage, page * perPage)
        const totalPages = Math.max(1, Math.ceil(z.records.length / perPage))
        return send(200, {
          success: true,
          errors: [],
          result,
          result_info: { page, per_page: perPage, total_pages: totalPages, total_count: z.records.length },
        })
      }
      if (req.method === 'POST' && batchPath) {
        calls.batch!++
        const z = zone(batchPath[1]!)
        if (!z) return fail(404, 7003, 'no such zone')
        if (!perms.has('dns:edit')) return fail(403, 10000, 'Authentication error')
        const batch = JSON.parse(body) as {
          deletes?: { id: string }[]
          patches?: DoubleRecord[]
          posts?: DoubleRecord[]
        }
        // Atomic: work on a copy and keep it only when every operation succeeded.
        const failAt = double.faults.failDeleteAt
        const work = failAt ? z.records : z.records.map((r) => ({ ...r }))
        for (const [i, d] of (batch.deletes ?? []).entries()) {
          if (failAt && i + 1 === failAt) {
            await publish(z)
            return fail(500, 1000, `internal error while deleting ${d.id}`)
          }
          const at = work.findIndex((r) => r.id === d.id)
          if (at < 0) return fail(400, 81044, `record ${d.id} does not exist`)
          work.splice(at, 1)
        }
        for (const p of batch.patches ?? []) {
          const r = work.find((x) => x.id === p.id)
          if (!r) return fail(400, 81044, `record ${p.id} does not exist`)
          Object.assign(r, p)
        }
        const posted = (batch.posts ?? []).map((p) => ({ ...p, id: newId() }))
        if (double.faults.dropPosts)
          double.faults.dropPosts = false // one batch only
        else work.push(...posted)
        z.records = work
        await publish(z)
        return send(200, {
          success: true,
          errors: [],
          result: { deletes: batch.deletes ?? [], patches: batch.patches ?? [], puts: [], posts: posted },
        })
      }
      return fail(404, 7000, 'No route for that URI')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  double.url = `https://127.0.0.1:${port}/client/v4`
  return double
}
