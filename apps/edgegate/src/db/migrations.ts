/** Numbered migrations, one set for SQLite and PostgreSQL; applied by kit's openDatabase under its lock. */
import type { DatabaseKind, Migration } from '@gatehouse/kit'
import { m0009, m0015 } from './migrations/administration.ts'
import { m0002, m0012, m0013, m0014 } from './migrations/decisions.ts'
import { m0007, m0011 } from './migrations/fingerprints.ts'
import { m0001 } from './migrations/init.ts'
import { m0008, m0010 } from './migrations/nodes.ts'
import { m0003, m0004, m0005, m0006 } from './migrations/web.ts'

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
