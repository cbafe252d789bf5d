/** Numbered migrations, one set for SQLite and PostgreSQL; applied by kit's openDatabase under its lock. */
import type { DatabaseKind, Migration } from '@gatehouse/kit'
import { type Kysely, sql } from 'kysely'

const m0001: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('nodes')
      .addColumn('instance_id', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('active', 'integer', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.unique())
      .addColumn('cert_name', 'text')
      .addColumn('cert_fingerprint', 'text', (c) => c.unique())
      .addColumn('created_ms', 'bigint', (c) => c.notNull())
      .addColumn('updated_ms', 'bigint', (c) => c.notNull())
      .addColumn('last_seen_ms', 'bigint')
      .execute()
    await db.schema.createIndex('nodes_cert_name').on('nodes').column('cert_name').execute()

    await db.schema
      .createTable('admins')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('created_ms', 'bigint', (c) => c.notNull())
      .addColumn('last_used_ms', 'bigint')
      .execute()
    await db.schema
      .createTable('sessions')
      .addColumn('id_hash', 'text', (c) => c.primaryKey())
      .addColumn('admin_name', 'text', (c) => c.notNull().references('admins.name').onDelete('cascade'))
      .addColumn('created_ms', 'bigint', (c) => c.notNull())
      .addColumn('expires_ms', 'bigint', (c) => c.notNull())
      .execute()

    await db.schema
      .createTable('fingerprints')
      .addColumn('instance_id', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull())
      .addColumn('reported_status', 'text', (c) => c.notNull())
      .addColumn('first_seen_ms', 'bigint', (c) => c.notNull())
      .addColumn('last_seen_ms', 'bigint', (c) => c.notNull())
      .addColumn('count', 'bigint', (c) => c.notNull())
      .addColumn('ips', 'text', (c) => c.notNull())
      .addColumn('ports', 'text', (c) => c.notNull())
      .addColumn('sightings', 'text', (c) => c.notNull())
      .addColumn('oldest_sighting_ms', 'bigint')
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('updated_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('fingerprints_pk', ['instance_id', 'fingerprint'])
      .execute()
    await db.schema
      .createIndex('fingerprints_oldest_sighting')
      .on('fingerprints')
      .column('oldest_sighting_ms')
      .execute()

    await db.schema
      .createTable('decisions')
      .addColumn('scope_type', 'text', (c) => c.notNull())
      .addColumn('scope_id', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('label', 'text', (c) => c.notNull())
      .addColumn('updated_us', 'bigint', (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('expires_ms', 'bigint')
      .addColumn('evidence', 'text')
      .addPrimaryKeyConstraint('decisions_pk', ['scope_type', 'scope_id', 'fingerprint'])
      .execute()
    await db.schema
      .createIndex('decisions_scope_updated')
      .on('decisions')
      .columns(['scope_type', 'scope_id', 'updated_us'])
      .execute()
    await db.schema
      .createTable('decision_clock')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('last_us', 'bigint', (c) => c.notNull())
      .execute()
    await sql`insert into decision_clock (id, last_us) values (1, 0)`.execute(db)

    await db.schema
      .createTable('signals')
      .addColumn('instance_id', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('observed_ms', 'bigint', (c) => c.notNull())
      .addColumn('host', 'text', (c) => c.notNull())
      .addColumn('site', 'text', (c) => c.notNull())
      .addColumn('ip', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('connections', 'bigint', (c) => c.notNull())
      .addColumn('errors', 'bigint', (c) => c.notNull())
      .addColumn('successes', 'bigint', (c) => c.notNull())
      .addColumn('window_seconds', 'integer', (c) => c.notNull())
      .addColumn('received_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('signals_pk', ['instance_id', 'event_id'])
      .execute()
    await db.schema.createIndex('signals_ip_observed').on('signals').columns(['ip', 'observed_ms']).execute()

    await db.schema
      .createTable('smtp_reports')
      .addColumn('instance_id', 'text', (c) => c.notNull())
      .addColumn('namespace', 'text', (c) => c.notNull())
      .addColumn('listener', 'text', (c) => c.notNull())
      .addColumn('replay_id', 'text', (c) => c.notNull())
      .addColumn('generated_ms', 'bigint', (c) => c.notNull())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('received_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('smtp_reports_pk', ['instance_id', 'namespace', 'listener'])
      .execute()

    await db.schema
      .createTable('audit_log')
      .addColumn('at_ms', 'bigint', (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('target', 'text', (c) => c.notNull())
      .execute()
  },
}

/**
 * Decision tombstones: a deleted decision keeps its row with `deleted = 1` (served to gates as
 * an explicit `pending`, hidden from administration), so gates that pulled the old verdict
 * drop it. Forward only.
 */
const m0002: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('decisions')
      .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
      .execute()
  },
}

/**
 * Publisher fencing for web signal nodes: the highest epoch seen per node; a batch with a
 * lower epoch is refused (409), so a paused former publisher cannot publish after its lease
 * passed to another instance. Forward only.
 */
const m0003: Migration = {
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
const m0004: Migration = {
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
const m0005: Migration = {
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
  const { networkOf } = await import('../web/candidates.ts')
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
  const { CORRELATION_MS } = await import('../web/store.ts')
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
const m0006: Migration = {
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

/**
 * PostgreSQL: a fingerprint's sightings and addresses, about 10 kB once a busy fingerprint holds
 * 128 of each, are compressed with lz4 instead of PostgreSQL's default pglz: every upload rewrites
 * them, and pglz was a third of PostgreSQL's CPU per merged observation (docs/performance/
 * edgegate.md, "Busy fingerprints"). Values are recompressed as they are rewritten. A server
 * built without lz4 (or older than 14) keeps pglz. SQLite: nothing to do.
 */
function m0007(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'postgres') return
      const { rows } = await sql<{ lz4: boolean }>`select 'lz4' = any(enumvals) as lz4 from pg_settings
        where name = 'default_toast_compression'`.execute(db)
      if (!rows[0]?.lz4) return
      await sql`alter table fingerprints alter column sightings set compression lz4,
        alter column ips set compression lz4`.execute(db)
    },
  }
}

/**
 * When each certificate node's client certificate expires, as last presented: edgegate sees
 * every node's certificate, so it can say centrally which ones are about to lock their gates
 * out. Nullable: token nodes have none, and certificate nodes until their next request.
 */
const m0008: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('nodes').addColumn('cert_expires_ms', 'bigint').execute()
  },
}

/**
 * The audit log by time: `audit list` and the dashboard read it newest first, and the
 * retention sweep deletes from its old end; without an index both scan the whole log.
 */
const m0009: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.createIndex('audit_log_at').on('audit_log').column('at_ms').execute()
  },
}

/** Node events announced, so several processes on one database alert once (nodes/health.ts). */
const m0010: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('node_alerts')
      .addColumn('instance_id', 'text', (c) => c.notNull())
      .addColumn('what', 'text', (c) => c.notNull())
      .addColumn('at_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('node_alerts_pk', ['instance_id', 'what'])
      .execute()
  },
}

/**
 * Fingerprint aggregates by last seen: the dashboard, `GET /api/fingerprints` and `fingerprint
 * list` read them most recently seen first, a page at a time. Without an index each page sorted
 * the whole table: at 500,000 aggregates (five nodes at the default `--max-fingerprints`) 0.5 to
 * 1.2 s a page, for which SQLite's server answered nobody else. SQLite also gets one by node and
 * time: its planner, without statistics, takes the node's primary-key range and sorts it. Not on
 * PostgreSQL: there the merge's generic lock plan, made on an empty table, would pick that index
 * over the primary key (it matches the node as well) and filter the fingerprint row by row; its
 * planner, with statistics, finds a node's most recently seen without it.
 */
const m0011 = (kind: DatabaseKind): Migration => ({
  async up(db: Kysely<unknown>) {
    await db.schema.createIndex('fingerprints_last_seen').on('fingerprints').column('last_seen_ms').execute()
    if (kind === 'sqlite') {
      await db.schema
        .createIndex('fingerprints_node_last_seen')
        .on('fingerprints')
        .columns(['instance_id', 'last_seen_ms'])
        .execute()
    }
  },
})

/**
 * Decisions by time: the dashboard and `GET /api/decisions` list the newest first across every
 * gate (by verdict or source too); the policy's index leads with the gate. At 200,000 decisions a
 * page sorted them all: 150-200 ms of SQLite's server per dashboard view. `deleted` leads, not
 * the scope type: SQLite's planner, without statistics, took a (scope type, deleted, time) index
 * for one gate's list over the policy's index, walking every gate's decisions. It still prefers
 * this one to the primary key for a lookup of many fingerprints by `IN` that also tests
 * `deleted`, so those lookups test `deleted` in JavaScript (`decisionsFor`).
 */
const m0012: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.createIndex('decisions_live_by_time').on('decisions').columns(['deleted', 'updated_us']).execute()
  },
}

/**
 * The purge mark of deleted decisions: tombstones tell gates to drop a verdict, so they were
 * kept forever. Retention now removes those older than `--deleted-decision-retention` and
 * records here the newest time it removed, in the same transaction: a gate whose cursor is
 * older may have missed one, and is told to pull its whole policy again (policy/routes.ts).
 */
const m0013: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('decision_clock')
      .addColumn('purged_us', 'bigint', (c) => c.notNull().defaultTo(0))
      .execute()
  },
}

/**
 * Expiring decisions by expiry: the sweep that ends manual ones (decisions/expiry.ts) reads
 * those due every ten seconds. Partial: only rows with an expiry, a small part of the table,
 * and no other query names the column in its conditions, so no plan changes.
 */
const m0014: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`create index decisions_expiring on decisions (expires_ms) where expires_ms is not null`.execute(db)
  },
}

/**
 * An administrator token may expire (`edgegate admin add|rotate-token --expires-in`): a token
 * handed to a script or a contractor should not work forever. Null: it never expires, as every
 * token did before.
 */
const m0015: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('admins').addColumn('expires_ms', 'bigint').execute()
  },
}

/** The migrations for a database of this kind (the same names on both). */
export function migrations(kind: DatabaseKind): Record<string, Migration> {
  return {
    '0001_init': m0001,
    '0002_decision_tombstones': m0002,
    '0003_signal_publisher_epoch': m0003,
    '0004_web_enforcement': m0004,
    '0005_web_evidence': m0005,
    '0006_web_evidence_groups': m0006,
    '0007_fingerprint_sets_lz4': m0007(kind),
    '0008_node_certificate_expiry': m0008,
    '0009_audit_log_by_time': m0009,
    '0010_node_alerts': m0010,
    '0011_fingerprints_by_last_seen': m0011(kind),
    '0012_decisions_by_time': m0012,
    '0013_decision_purge_mark': m0013,
    '0014_decisions_by_expiry': m0014,
    '0015_admin_token_expiry': m0015,
  }
}
