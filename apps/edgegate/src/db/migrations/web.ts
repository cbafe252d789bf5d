/**
 * Web signals and evidence: publisher fencing, TLS sightings, the evidence table and its
 * backfills. Each keeps its number; ../migrations.ts lists them in order.
 */
import type { Migration } from '@gatehouse/kit'
import { type Kysely, sql } from 'kysely'

/**
 * Publisher fencing for web signal nodes: the highest epoch seen per node; a batch with a
 * lower epoch is refused (409), so a paused former publisher cannot publish after its lease
 * passed to another instance. Forward only.
 */
export const m0003: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('signal_publishers')
      .addColumn('instance_id', 'text', (c) => c.primaryKey())
      .addColumn('epoch', 'bigint', (c) => c.notNull())
      .addColumn('updated_ms', 'bigint', (c) => c.notNull())
      .execute()
  },
}

/**
 * Web evidence and enforcement: TLS sightings with the host they were seen for (the join side
 * of the candidate report), an index on signal time (the report's interval), and one row of
 * shared enforcement state (the runtime kill switch) that every edgegate process reads.
 */
export const m0004: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('web_sightings')
      .addColumn('instance_id', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull())
      .addColumn('ip', 'text', (c) => c.notNull())
      .addColumn('port', 'integer', (c) => c.notNull())
      .addColumn('host', 'text', (c) => c.notNull())
      .addColumn('seen_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('web_sightings_pk', ['instance_id', 'fingerprint', 'ip', 'port', 'host', 'seen_ms'])
      .execute()
    await db.schema
      .createIndex('web_sightings_ip_host_seen')
      .on('web_sightings')
      .columns(['ip', 'host', 'seen_ms', 'instance_id', 'fingerprint'])
      .execute()
    await db.schema.createIndex('web_sightings_seen').on('web_sightings').column('seen_ms').execute()
    // Node pairings: a web signal node's signals match its paired TLS gates' sightings whatever the SNI.
    await db.schema
      .createTable('web_node_pairs')
      .addColumn('websignal_id', 'text', (c) => c.notNull().references('nodes.instance_id').onDelete('cascade'))
      .addColumn('tlsgate_id', 'text', (c) => c.notNull().references('nodes.instance_id').onDelete('cascade'))
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('created_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('web_node_pairs_pk', ['websignal_id', 'tlsgate_id'])
      .execute()
    await db.schema
      .createIndex('signals_node_observed')
      .on('signals')
      .columns(['instance_id', 'observed_ms', 'ip'])
      .execute()
    await db.schema
      .createIndex('web_sightings_gate_ip_seen')
      .on('web_sightings')
      .columns(['instance_id', 'ip', 'seen_ms', 'fingerprint'])
      .execute()
    await db.schema.createIndex('signals_observed').on('signals').columns(['observed_ms', 'ip', 'host']).execute()
    await db.schema
      .createIndex('decisions_source_status')
      .on('decisions')
      .columns(['source', 'status', 'deleted'])
      .execute()
    await db.schema
      .createTable('web_enforcement_state')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('kill_switch', 'integer', (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('updated_ms', 'bigint', (c) => c.notNull())
      .execute()
    await sql`insert into web_enforcement_state (id, kill_switch, actor, updated_ms) values (1, 0, '', 0)`.execute(db)
  },
}

/**
 * Ingest-time correlation: the matches of the web candidate report stored as signals and TLS
 * sightings arrive (src/web/evidence.ts), filled here from the signals and sightings already
 * stored. The covering index on signal time is what a report reads.
 */
export const m0005: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('web_evidence')
      .addColumn('gate', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull())
      .addColumn('node', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('observed_ms', 'bigint', (c) => c.notNull())
      .addColumn('site', 'text', (c) => c.notNull())
      .addColumn('ip', 'text', (c) => c.notNull())
      .addColumn('connections', 'integer', (c) => c.notNull())
      .addColumn('errors', 'integer', (c) => c.notNull())
      .addColumn('successes', 'integer', (c) => c.notNull())
      .addColumn('sighting_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('web_evidence_pk', ['gate', 'fingerprint', 'node', 'event_id'])
      .execute()
    await db.schema
      .createIndex('web_evidence_observed')
      .on('web_evidence')
      .columns([
        'observed_ms',
        'gate',
        'fingerprint',
        'node',
        'event_id',
        'site',
        'ip',
        'connections',
        'errors',
        'successes',
      ])
      .execute()
    await db.schema.createIndex('web_evidence_sighting').on('web_evidence').column('sighting_ms').execute()
    // The backfill is 0006's (it adds columns the rows need, and refills the table).
  },
}

/** Signals' client networks, filled in by address (keyset over `signals_ip_observed`). */
async function backfillSignalNetworks(db: Kysely<unknown>): Promise<void> {
  // Imported here, not at the top: every command opens the database with these migrations,
  // and only a migration that runs needs the address parser.
  const { networkOf } = await import('../../web/candidates.ts')
  let after = ''
  for (;;) {
    const { rows } = await sql<{
      ip: string
    }>`select distinct ip from signals where ip > ${after} order by ip limit 500`.execute(db)
    if (rows.length === 0) return
    const cases = sql.join(
      rows.map((r) => sql`when ${r.ip} then ${networkOf(r.ip)}`),
      sql` `,
    )
    const ips = sql.join(rows.map((r) => sql`${r.ip}`))
    await sql`update signals set network = case ip ${cases} end where ip in (${ips})`.execute(db)
    after = rows[rows.length - 1]!.ip
  }
}

/**
 * The matches of every stored signal and sighting, as 0006 defines them (the statements of
 * src/web/evidence.ts at this migration, written out so later changes there cannot alter it).
 */
async function backfillEvidence(db: Kysely<unknown>): Promise<void> {
  const { CORRELATION_MS } = await import('../../web/store.ts')
  const near = sql.lit(CORRELATION_MS)
  const columns = sql`t.instance_id, t.fingerprint, s.instance_id, s.event_id, s.observed_ms, s.site, s.ip, s.network,
  s.connections, s.errors, s.successes`
  const into = sql`insert into web_evidence (gate, fingerprint, node, event_id, observed_ms, site, ip, network,
  connections, errors, successes, sighting_ms)`
  const near5 = sql`t.seen_ms >= s.observed_ms - ${near} and t.seen_ms <= s.observed_ms + ${near}`
  const upsert = sql`on conflict (gate, fingerprint, node, event_id) do update set sighting_ms =
  case when excluded.sighting_ms > web_evidence.sighting_ms then excluded.sighting_ms else web_evidence.sighting_ms end`
  await sql`${into}
select ${columns}, max(t.seen_ms) from signals s
join web_sightings t on t.ip = s.ip and t.host = s.host and ${near5}
group by ${columns}
${upsert}`.execute(db)
  await sql`${into}
select ${columns}, max(t.seen_ms) from web_node_pairs p
cross join signals s
join web_sightings t on t.instance_id = p.tlsgate_id and t.ip = s.ip and ${near5}
where s.instance_id = p.websignal_id
group by ${columns}
${upsert}`.execute(db)
}

/**
 * The candidate report aggregated by the database (src/web/evidence.ts `groupedEvidence`):
 * each signal's client network stored with it, evidence indexed by (gate, fingerprint, time)
 * instead of by time alone, and the pairs with evidence listed with their newest signal time.
 */
export const m0006: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('signals')
      .addColumn('network', 'text', (c) => c.notNull().defaultTo(''))
      .execute()
    await backfillSignalNetworks(db)
    await db.schema
      .alterTable('web_evidence')
      .addColumn('network', 'text', (c) => c.notNull().defaultTo(''))
      .execute()
    await db.schema.dropIndex('web_evidence_observed').execute()
    await db.schema.createIndex('web_evidence_observed').on('web_evidence').column('observed_ms').execute()
    await db.schema
      .createIndex('web_evidence_group')
      .on('web_evidence')
      .columns([
        'gate',
        'fingerprint',
        'observed_ms',
        'ip',
        'network',
        'site',
        'node',
        'connections',
        'errors',
        'successes',
      ])
      .execute()
    await db.schema
      .createTable('web_evidence_groups')
      .addColumn('gate', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull())
      .addColumn('last_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('web_evidence_groups_pk', ['gate', 'fingerprint'])
      .execute()
    await sql`delete from web_evidence`.execute(db)
    await backfillEvidence(db)
    await sql`insert into web_evidence_groups (gate, fingerprint, last_ms)
select gate, fingerprint, max(observed_ms) from web_evidence group by gate, fingerprint`.execute(db)
  },
}
