/**
 * HA roles: which side may write, the replication between the two knotd (knot-replication.ts),
 * the status both sides publish, and the promotion of a secondary.
 *
 * The role comes from DNSCTL_HA_ROLE until a promotion stores one (ha_state), which then wins.
 * A primary that learns that its peer was promoted after it (a higher epoch) fences itself: it
 * turns read-only, so the two sides never both accept writes.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from '@gatehouse/kit'
import type { ListenAddress } from '@gatehouse/kit/net.ts'
import type { Kysely } from 'kysely'
import type { Config } from '../config.ts'
import type { DB } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { type Address, querySoa } from '../knot/dns.ts'
import type { Knotc } from '../knot/knotc.ts'
import { normalizeZoneName } from '../provider/zone-names.ts'
import type { Meta } from '../publish/pipeline.ts'
import { parseZoneText, stateOf } from '../zones/model.ts'
import type { ZoneService } from '../zones/service.ts'
import { KnotReplication } from './knot-replication.ts'
import { checkPeer, type PeerCheck } from './peer.ts'
import type { HaRole, HaStatus, LocalHaStatus, PromoteResultBody, ZoneReplicationItem } from './status.ts'
import { appendHaEvent, lastPublicationAt, readHaState, writeHaState } from './store.ts'
import { vipOwnership } from './vip.ts'
import { withoutDnssec } from './zone-dump.ts'

function isZoneName(name: string): boolean {
  try {
    return normalizeZoneName(name) === name
  } catch {
    return false
  }
}

export interface HaDeps {
  config: Config
  db: Kysely<DB>
  knotc: Knotc
  zones: ZoneService
  log: Logger
  now: () => Date
}

function formatAddress(a: ListenAddress): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`
}

function publicName(zone: string): string {
  return zone.replace(/\.$/, '')
}

export class HaService {
  readonly deps: HaDeps
  #role: HaRole
  #epoch = 0
  #changedAt: string | null = null
  readonly #replication: KnotReplication | undefined
  /** The newest peer check (sync loop or status call). */
  #peer: PeerCheck | undefined
  /** Zone -> [primary serial, when the secondary was first seen behind it]. */
  readonly #behind = new Map<string, [number, number]>()
  #lastInSyncAt: string | null = null
  #timer: NodeJS.Timeout | undefined
  #syncing: Promise<void> | undefined
  #promoting = false
  /**
   * The peer's epoch that fenced this primary. Sticky (stored): a fenced node that loses sight
   * of its peer must not turn writable again, or a partition would give two writers.
   */
  #fencedBy: number | undefined
  /** Zones seen behind the primary at the last sync (secondary). */
  #lagging = new Set<string>()

  constructor(deps: HaDeps) {
    this.deps = deps
    this.#role = deps.config.ha.role
    const peerKnot = deps.config.ha.peerKnot
    this.#replication = peerKnot ? new KnotReplication(deps.knotc, peerKnot) : undefined
  }

  get role(): HaRole {
    return this.#role
  }

  get epoch(): number {
    return this.#epoch
  }

  /** The newest peer check, if any. */
  get lastPeer(): PeerCheck | undefined {
    return this.#peer
  }

  /** Load the stored role, configure knotd for it and start following the peer. */
  async start(): Promise<void> {
    const stored = await readHaState(this.deps.db)
    if (stored) {
      if (stored.role !== this.#role) {
        this.deps.log.warn(
          { configured: this.#role, stored: stored.role, epoch: stored.epoch },
          'the stored HA role (from a promotion) wins over DNSCTL_HA_ROLE',
        )
      }
      this.#role = stored.role
      this.#epoch = Number(stored.epoch)
      this.#changedAt = stored.changed_at
      this.#fencedBy = stored.fenced_by_epoch === null ? undefined : Number(stored.fenced_by_epoch)
    }
    if (this.#role === 'standalone') return
    await this.sync()
    this.#timer = setInterval(() => void this.sync(), this.deps.config.ha.syncInterval)
    this.#timer.unref()
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer)
    await this.#syncing
  }

  /** One round: configure knotd, check the peer and (secondary) follow the primary's zone list. */
  sync(): Promise<void> {
    if (this.#syncing) return this.#syncing
    this.#syncing = this.#sync()
      .catch((err) => this.deps.log.error({ err }, 'HA sync failed'))
      .finally(() => {
        this.#syncing = undefined
      })
    return this.#syncing
  }

  async #sync(): Promise<void> {
    if (this.#promoting || !this.#replication) return
    const { config, log } = this.deps
    if (this.#role === 'primary') await this.#replication.configurePrimary()
    else await this.#replication.configureSecondary()
    if (config.ha.peerApi) this.#peer = await checkPeer(config.ha.peerApi, config.ha.peerTimeout, this.deps.now)
    await this.#fenceIfOutranked()
    if (this.#role === 'secondary' && this.#peer?.status && !this.#promoting) {
      const peer = this.#peer.status
      if (peer.role === 'primary') {
        // Names from the peer go into knotc arguments: only plain DNS names are followed.
        const zones = peer.replication.zones.filter((z) => isZoneName(z.zone)).map((z) => `${z.zone}.`)
        const { added, removed } = await this.#replication.follow(zones)
        if (added.length + removed.length > 0) log.info({ added, removed }, 'following the primary zone list')
        await this.#nudgeLagging(peer.replication.zones)
      }
    }
  }

  /**
   * A zone still behind the primary's serial at two syncs in a row missed its NOTIFY (sent while
   * knotd was busy, or lost: it is UDP): ask knotd to refresh it now instead of at the SOA refresh
   * timer, which is often an hour.
   */
  async #nudgeLagging(primaryZones: LocalHaStatus['replication']['zones']): Promise<void> {
    const { config, knotc, log } = this.deps
    const behind = new Set<string>()
    for (const z of primaryZones) {
      const zone = `${z.zone}.`
      const { serial: local } = await this.#serial(config.knot.address, zone)
      if (z.primary_serial === null || local === z.primary_serial) continue
      behind.add(zone)
      if (!this.#lagging.has(zone)) continue
      log.warn(
        { zone: z.zone, serial: local, primary_serial: z.primary_serial },
        'zone still behind the primary; refreshing it',
      )
      await knotc.run('zone-refresh', zone).catch((err) => log.warn({ err, zone: z.zone }, 'zone-refresh failed'))
    }
    this.#lagging = behind
  }

  /** A primary whose peer is a primary with a higher epoch was replaced: it fences itself for good. */
  async #fenceIfOutranked(): Promise<void> {
    const peer = this.#peer?.status
    if (this.#role !== 'primary' || peer?.role !== 'primary' || peer.epoch <= this.#epoch) return
    if (this.#fencedBy !== undefined && this.#fencedBy >= peer.epoch) return
    await writeHaState(this.deps.db, {
      role: 'primary',
      epoch: this.#epoch,
      fenced_by_epoch: peer.epoch,
      changed_at: this.#changedAt ?? this.deps.now().toISOString(),
      actor: 'dnsctl',
      request_id: 'fencing',
    })
    this.#fencedBy = peer.epoch
    this.deps.log.error(
      { epoch: this.#epoch, peer_epoch: peer.epoch },
      'the peer was promoted after this primary: fenced (read-only) until "dnsctl ha demote"',
    )
  }

  /** One HA event (promotion or demotion attempt) with the role this node has now. */
  #event(
    action: 'promote' | 'demote',
    outcome: 'committed' | 'refused' | 'failed',
    to: string,
    meta: Meta,
    reason: string | undefined,
    detail: Record<string, unknown>,
  ): Promise<void> {
    return appendHaEvent(this.deps.db, {
      at: this.deps.now().toISOString(),
      action,
      actor: meta.actor,
      request_id: meta.requestId,
      outcome,
      from_role: this.#role,
      to_role: to,
      epoch: this.#epoch,
      detail: JSON.stringify({ ...(reason ? { reason } : {}), ...detail }),
    })
  }

  /** Store the new role and epoch (they outlive restarts) and take them on. */
  async #switchRole(role: 'primary' | 'secondary', epoch: number, meta: Meta): Promise<void> {
    const changedAt = this.deps.now().toISOString()
    await writeHaState(this.deps.db, {
      role,
      epoch,
      fenced_by_epoch: null,
      changed_at: changedAt,
      actor: meta.actor,
      request_id: meta.requestId,
    })
    this.#role = role
    this.#epoch = epoch
    this.#changedAt = changedAt
    this.#fencedBy = undefined
    this.#behind.clear()
  }

  /** Why writes are refused now, or undefined when this node may write. */
  readOnlyReason(): string | undefined {
    const peerApi = this.deps.config.ha.peerApi
    if (this.#promoting) return 'a promotion to primary is running'
    if (this.#role === 'secondary') {
      return `this dnsctl is the HA secondary: it replicates from the primary${peerApi ? ` (${formatAddress(peerApi)})` : ''}, which takes the writes; promote it with "dnsctl ha promote" when the primary is gone`
    }
    if (this.#role !== 'primary') return undefined
    const peer = this.#peer?.status
    const outranked = peer?.role === 'primary' && peer.epoch > this.#epoch ? peer.epoch : this.#fencedBy
    if (outranked !== undefined) {
      return `the peer was promoted after this node (epoch ${outranked} > ${this.#epoch}): this former primary is fenced and read-only until "dnsctl ha demote"`
    }
    if (peer?.role === 'primary' && peer.epoch === this.#epoch) {
      return `both nodes are primary with epoch ${this.#epoch}: the pair is misconfigured (set DNSCTL_HA_ROLE=secondary on one); writes stay refused on both`
    }
    return undefined
  }

  /** Zones replicated, with the primary's and the secondary's serials (absolute names). */
  async #zoneNames(): Promise<string[]> {
    if (this.#role === 'secondary') return this.#replication ? this.#replication.replicatedZones() : []
    return this.deps.zones.list().map((z) => z.name)
  }

  /** The serial `server` answers for `zone`, or null and why not (an error, not a refusal by rcode). */
  async #serial(server: Address, zone: string): Promise<{ serial: number | null; error?: string }> {
    try {
      const a = await querySoa(server, zone, this.deps.config.ha.peerTimeout)
      return { serial: a.rcode === 'NOERROR' && a.authoritative && a.serial !== undefined ? a.serial : null }
    } catch (err) {
      return { serial: null, error: (err as Error).message }
    }
  }

  async #replicationState(checkedAt: Date): Promise<LocalHaStatus['replication']> {
    const { config } = this.deps
    const peerKnot = config.ha.peerKnot
    const zones = await this.#zoneNames()
    if (this.#role === 'standalone' || !peerKnot) {
      return {
        state: 'not_configured',
        checked_at: checkedAt.toISOString(),
        zones_in_sync: 0,
        max_lag_seconds: 0,
        zones: [],
      }
    }
    const local = config.knot.address
    const [primary, secondary] = this.#role === 'primary' ? [local, peerKnot] : [peerKnot, local]
    // Why the peer's knotd did not answer (the first zone's reason): a stopped knotd is refused
    // at once (connected socket), one that drops packets costs --ha-peer-timeout.
    let peerError: string | undefined
    const items: ZoneReplicationItem[] = await Promise.all(
      zones.map(async (zone) => {
        const [pa, sa] = await Promise.all([this.#serial(primary, zone), this.#serial(secondary, zone)])
        peerError ??= this.#role === 'primary' ? sa.error : pa.error
        const [p, s] = [pa.serial, sa.serial]
        const inSync = p !== null && p === s
        let lag: number | null = null
        if (inSync) {
          this.#behind.delete(zone)
          lag = 0
        } else if (p !== null) {
          const seen = this.#behind.get(zone)
          const since = seen && seen[0] === p ? seen[1] : checkedAt.getTime()
          this.#behind.set(zone, [p, since])
          lag = Math.round((checkedAt.getTime() - since) / 100) / 10
        }
        return { zone: publicName(zone), primary_serial: p, secondary_serial: s, in_sync: inSync, lag_seconds: lag }
      }),
    )
    const inSync = items.filter((z) => z.in_sync).length
    const peerSide = items.map((z) => (this.#role === 'primary' ? z.secondary_serial : z.primary_serial))
    const state =
      items.length > 0 && peerSide.every((s) => s === null)
        ? 'peer_unreachable'
        : inSync === items.length
          ? 'in_sync'
          : 'lagging'
    if (state === 'in_sync') this.#lastInSyncAt = checkedAt.toISOString()
    const maxLag = Math.max(0, ...items.map((z) => z.lag_seconds ?? 0))
    return {
      state,
      checked_at: checkedAt.toISOString(),
      zones_in_sync: inSync,
      max_lag_seconds: maxLag,
      zones: items,
      ...(state === 'peer_unreachable' && peerError ? { error: `the peer's knotd: ${peerError}` } : {}),
    }
  }

  /** This node's side of the status (what the peer fetches). */
  async localStatus(): Promise<LocalHaStatus> {
    const { config, db } = this.deps
    const checkedAt = this.deps.now()
    const [vip, replication] = await Promise.all([
      vipOwnership(config.ha.vip, config.ha.vipNetns),
      this.#replicationState(checkedAt),
    ])
    const reason = this.readOnlyReason()
    return {
      role: this.#role,
      write_mode: reason === undefined ? 'read-write' : 'read-only',
      read_only_reason: reason ?? null,
      epoch: this.#epoch,
      role_changed_at: this.#changedAt,
      vip,
      replication,
      snapshot: {
        zones: this.#role === 'secondary' ? replication.zones.length : this.deps.zones.list().length,
        last_at: this.#role === 'secondary' ? this.#lastInSyncAt : await lastPublicationAt(db),
      },
      checked_at: checkedAt.toISOString(),
    }
  }

  /** GET /v1/status/ha: this node, and (unless include_peer is false) a fresh check of the peer. */
  async status(includePeer: boolean): Promise<HaStatus> {
    const { config } = this.deps
    const peerApi = config.ha.peerApi
    const [local, peer] = await Promise.all([
      this.localStatus(),
      includePeer && peerApi ? checkPeer(peerApi, config.ha.peerTimeout, this.deps.now) : undefined,
    ])
    if (peer) this.#peer = peer
    if (!includePeer || (this.#role === 'standalone' && !peerApi)) return { ...local, peer: null }
    const last = peer ?? this.#peer
    return {
      ...local,
      peer: {
        api: peerApi ? formatAddress(peerApi) : null,
        knot: config.ha.peerKnot ? formatAddress(config.ha.peerKnot) : null,
        reachable: last?.reachable ?? false,
        latency_ms: last?.latency_ms ?? null,
        checked_at: last?.checked_at ?? local.checked_at,
        error: last ? last.error : 'no peer API configured (--ha-peer-api)',
        status: last?.status ?? null,
      },
    }
  }

  /**
   * POST /v1/ha/demote: a former primary rejoins as the secondary of the promoted peer. Refused
   * unless the peer answers as a writable primary: demoting must never leave the pair without one.
   */
  async demote(meta: Meta, reason: string | undefined): Promise<{ role: HaRole; epoch: number; zones: string[] }> {
    const { config, zones, log } = this.deps
    const event = (outcome: 'committed' | 'refused' | 'failed', detail: Record<string, unknown>) =>
      this.#event('demote', outcome, 'secondary', meta, reason, detail)
    if (this.#role !== 'primary' || !this.#replication || !config.ha.peerApi) {
      await event('refused', { why: 'not an HA primary with a peer' })
      throw errors.not_primary(this.#role)
    }
    if (this.#promoting) throw errors.promotion_running()
    await this.#syncing
    const peer = await checkPeer(config.ha.peerApi, config.ha.peerTimeout, this.deps.now)
    this.#peer = peer
    const st = peer.status
    if (!peer.reachable || st?.role !== 'primary' || st.write_mode !== 'read-write') {
      const why = peer.reachable
        ? `the peer is ${st?.role ?? 'unknown'} ${st?.write_mode ?? ''}`.trim()
        : `the peer does not answer (${peer.error})`
      await event('refused', { why })
      throw errors.demotion_refused(why)
    }
    this.#promoting = true
    try {
      const released = zones.list().map((z) => z.name)
      for (const name of released) await zones.release(name, meta)
      const epoch = Math.max(this.#epoch, st.epoch)
      await event('committed', { zones: released.map(publicName), new_epoch: epoch })
      await this.#switchRole('secondary', epoch, meta)
      log.warn({ epoch, zones: released.length, actor: meta.actor }, 'demoted to HA secondary')
      return { role: 'secondary', epoch, zones: released.map(publicName) }
    } catch (err) {
      await event('failed', { why: (err as Error).message }).catch(() => {})
      throw err
    } finally {
      this.#promoting = false
      await this.sync()
    }
  }

  /**
   * POST /v1/ha/promote: the secondary takes the zones over from its knotd and becomes the
   * writable primary. Refused while the old primary answers and is writable.
   */
  async promote(meta: Meta, reason: string | undefined): Promise<PromoteResultBody> {
    const { config, knotc, zones, log } = this.deps
    const event = (outcome: 'committed' | 'refused' | 'failed', to: string, detail: Record<string, unknown>) =>
      this.#event('promote', outcome, to, meta, reason, detail)
    if (this.#role !== 'secondary' || !this.#replication) {
      await event('refused', this.#role, { why: 'not a secondary' })
      throw errors.not_secondary(this.#role)
    }
    if (this.#promoting) throw errors.promotion_running()
    await this.#syncing
    const peer = config.ha.peerApi
      ? await checkPeer(config.ha.peerApi, config.ha.peerTimeout, this.deps.now)
      : undefined
    this.#peer = peer ?? this.#peer
    if (peer?.reachable && peer.status?.write_mode === 'read-write') {
      const where = formatAddress(config.ha.peerApi!)
      await event('refused', 'primary', {
        why: 'peer reachable and writable',
        peer: where,
        peer_role: peer.status.role,
      })
      throw errors.peer_still_writable(where, peer.status.role)
    }
    this.#promoting = true
    const replication = this.#replication
    const dir = await mkdtemp(join(config.stateDir, 'promote-'))
    try {
      const names = await replication.replicatedZones()
      const taken: PromoteResultBody['zones'] = []
      const states = []
      for (const name of names) {
        await knotc.flush(name, dir)
        const text = withoutDnssec(await readFile(join(dir, `${publicName(name)}.zone`), 'utf8'))
        states.push(stateOf(name, 'primary', parseZoneText(name, text)))
      }
      for (const state of states) {
        await zones.adopt(state, meta)
        taken.push({ zone: publicName(state.name), serial: state.serial, revision: state.revision })
      }
      await replication.becomePrimary(names)
      const warnings: string[] = []
      for (const name of names) {
        await knotc
          .reload(name)
          .catch((err) => warnings.push(`reloading ${publicName(name)}: ${(err as Error).message}`))
      }
      const epoch = Math.max(this.#epoch, peer?.status?.epoch ?? 0) + 1
      await event('committed', 'primary', {
        zones: taken.map((z) => z.zone),
        peer_reachable: peer?.reachable ?? null,
        new_epoch: epoch,
      })
      await this.#switchRole('primary', epoch, meta)
      log.warn({ epoch, zones: taken.length, actor: meta.actor }, 'promoted to HA primary')
      if (peer?.reachable)
        warnings.push('the old primary still answers (read-only); it stays fenced while it sees this epoch')
      return { role: 'primary', epoch, zones: taken, warnings }
    } catch (err) {
      await event('failed', 'primary', { why: (err as Error).message }).catch(() => {})
      if ((err as { code?: string }).code !== undefined && (err as { statusCode?: number }).statusCode) throw err
      throw errors.promotion_failed((err as Error).message)
    } finally {
      this.#promoting = false
      await rm(dir, { recursive: true, force: true })
    }
  }
}
