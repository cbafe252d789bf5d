/**
 * Wire types of the edge control plane (spec: edge-gate.md, "Resources and their fields"):
 * what gate nodes send to `edgegate` and what it answers. Shared by the control plane
 * (request validation) and the gates (building requests, reading responses), so both
 * sides agree on one schema. Every object is strict (`additionalProperties: false`).
 *
 * @example
 * import { ObservationBatch, type PolicyResponse } from '@gatehouse/kit'
 * app.post('/v1/observations/batch', { schema: { body: ObservationBatch } }, handler)
 */
import { type Static, Type } from 'typebox'
import { Compile } from 'typebox/compile'
import { EDGE_LIMITS, FINGERPRINT_PATTERN, INSTANCE_ID_PATTERN, TIMESTAMP_PATTERN } from './edge-limits.ts'

export { EDGE_LIMITS, FINGERPRINT_PATTERN, INSTANCE_ID_PATTERN, TIMESTAMP_PATTERN }

const Timestamp = Type.String({
  pattern: TIMESTAMP_PATTERN,
  description: 'RFC 3339 timestamp (UTC with Z when written; any offset is read)',
})
const InstanceId = Type.String({ pattern: INSTANCE_ID_PATTERN })
const Fingerprint = Type.String({ pattern: FINGERPRINT_PATTERN })
const Ip = Type.String({ minLength: 2, maxLength: 45, description: 'IPv4 or IPv6 address' })
const Port = Type.Integer({ minimum: 0, maximum: 65535 })

export const Verdict = Type.Union([Type.Literal('approved'), Type.Literal('blocked'), Type.Literal('pending')])
export type Verdict = Static<typeof Verdict>

export const Sighting = Type.Object({ ip: Ip, port: Port, last_seen: Timestamp }, { additionalProperties: false })
export type Sighting = Static<typeof Sighting>

/**
 * Fingerprint metadata: `sni`, `ja3`, `ja4` for TLS gates; the SSH gate sends its KEXINIT
 * lists under snake_case keys (`kex_algorithms`, ...). At most 64 KiB encoded (checked by the
 * control plane, which a schema cannot express).
 */
export const ObservationMetadata = Type.Record(Type.String({ pattern: '^[a-z][a-z0-9_]{0,63}$' }), Type.String(), {
  maxProperties: 32,
  additionalProperties: false,
})

export const Observation = Type.Object(
  {
    fingerprint: Fingerprint,
    /** The verdict the gate holds locally (`unknown` when it has none). */
    status: Type.Union([
      Type.Literal('approved'),
      Type.Literal('blocked'),
      Type.Literal('pending'),
      Type.Literal('unknown'),
    ]),
    first_seen: Timestamp,
    last_seen: Timestamp,
    ips: Type.Array(Ip, { maxItems: EDGE_LIMITS.perFingerprint }),
    ports: Type.Array(Port, { maxItems: EDGE_LIMITS.perFingerprint }),
    sightings: Type.Array(Sighting, { maxItems: EDGE_LIMITS.perFingerprint }),
    /** The gate's running total for this fingerprint (not a delta: re-sending is idempotent). */
    count: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    metadata: Type.Optional(ObservationMetadata),
  },
  { additionalProperties: false },
)
export type Observation = Static<typeof Observation>

export const ObservationBatch = Type.Object(
  {
    instance_id: InstanceId,
    observations: Type.Array(Observation, { maxItems: EDGE_LIMITS.pageSize }),
  },
  { additionalProperties: false },
)
export type ObservationBatch = Static<typeof ObservationBatch>

export const ObservationBatchResult = Type.Object({
  /** Observations merged (re-sent pages count again; merging is idempotent). */
  accepted: Type.Integer(),
})
export type ObservationBatchResult = Static<typeof ObservationBatchResult>

export const Decision = Type.Object(
  {
    scope_type: Type.Literal('instance'),
    scope_id: Type.String(),
    fingerprint: Type.String(),
    status: Verdict,
    label: Type.String(),
    updated_at: Timestamp,
    actor: Type.String(),
    /**
     * When an expiring decision ends (an automated block's expiry): past it a gate treats the
     * verdict as pending, also while it cannot reach the control plane (which then sends the
     * explicit pending). Absent: the decision does not expire.
     */
    expires_at: Type.Optional(Timestamp),
  },
  // A response: gates tolerate fields added later.
  { additionalProperties: true },
)
export type Decision = Static<typeof Decision>

export const PolicyResponse = Type.Object(
  {
    /** Send as the next `since`. */
    cursor: Timestamp,
    decisions: Type.Array(Decision),
    /** True when the page limit cut the answer short: pull again at once with the new cursor. */
    more: Type.Boolean(),
    /** Present only when trusted-source discovery is configured. */
    trusted_ranges: Type.Optional(Type.Array(Type.String())),
    /**
     * True when the gate must pull again from the beginning, and drop the control plane's
     * decisions that the full answer no longer holds: the `since` sent is later than any
     * decision this control plane has issued (its database was restored or failed over to an
     * older copy), or earlier than deleted decisions it no longer keeps (retention). A gate
     * that does not know the field reads the page as usual.
     */
    resync: Type.Optional(Type.Boolean()),
    /** Why, with `resync`: `behind` (restored or failed over) or `purged` (retention). */
    resync_reason: Type.Optional(Type.Union([Type.Literal('behind'), Type.Literal('purged')])),
  },
  { additionalProperties: true },
)
export type PolicyResponse = Static<typeof PolicyResponse>

/** A response of the control plane that does not match its schema. */
export class EdgeWireError extends Error {
  override readonly name = 'EdgeWireError'
}

const policyCheck = Compile(PolicyResponse)

/**
 * Check a parsed `GET /v1/policy` body before a gate acts on it.
 *
 * @example const policy = readPolicyResponse(res.json()) // throws EdgeWireError when malformed
 */
export function readPolicyResponse(value: unknown): PolicyResponse {
  if (policyCheck.Check(value)) return value
  const first = [...policyCheck.Errors(value)][0]
  throw new EdgeWireError(`policy response ${first?.instancePath || '(body)'} ${first?.message ?? 'is invalid'}`)
}

/** One web scanner signal. There is deliberately no request-target and no user-agent field. */
export const Signal = Type.Object(
  {
    event_id: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' }),
    observed_at: Timestamp,
    host: Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9._:\\[\\]-]+$' }),
    site: Type.String({ minLength: 1, maxLength: 128 }),
    ip: Ip,
    trigger: Type.String({ pattern: '^[a-z][a-z0-9_]{0,63}$' }),
    connections: Type.Integer({ minimum: 0, maximum: 2 ** 31 }),
    errors: Type.Integer({ minimum: 0, maximum: 2 ** 31 }),
    successes: Type.Integer({ minimum: 0, maximum: 2 ** 31 }),
    window_seconds: Type.Integer({ minimum: 1, maximum: 86_400 }),
  },
  { additionalProperties: false },
)
export type Signal = Static<typeof Signal>

export const SignalBatch = Type.Object(
  {
    instance_id: InstanceId,
    signals: Type.Array(Signal, { maxItems: EDGE_LIMITS.signalsPerBatch }),
    /**
     * The publisher's fencing epoch (ours; websignal sends it with every batch). The control
     * plane refuses a batch whose epoch is lower than the highest it has seen for the node.
     */
    epoch: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
  },
  { additionalProperties: false },
)
export type SignalBatch = Static<typeof SignalBatch>

export const SignalBatchResult = Type.Object({
  /** Newly stored signals. */
  accepted: Type.Integer(),
  /** Signals whose (node, event_id) was already stored: nothing changed. */
  duplicates: Type.Integer(),
})
export type SignalBatchResult = Static<typeof SignalBatchResult>

const SmtpEvidence = Type.Object(
  {
    kind: Type.String({ pattern: '^[a-z][a-z0-9_]{0,63}$' }),
    ip: Type.Optional(Ip),
    fingerprint: Type.Optional(Fingerprint),
    count: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    last_seen: Type.Optional(Timestamp),
  },
  { additionalProperties: false },
)

/**
 * An SMTP correlation report (the spec leaves field names other than instance_id to us).
 * `replay_id` is derived by the producer from the content (e.g. SHA-256 of the canonical
 * report): the same replay_id means the same report.
 */
export const SmtpReport = Type.Object(
  {
    instance_id: InstanceId,
    namespace: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' }),
    listener: Type.String({ minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9.:\\[\\]_-]+$' }),
    coverage: Type.Object({ from: Timestamp, to: Timestamp }, { additionalProperties: false }),
    generated_at: Timestamp,
    replay_id: Type.String({ pattern: '^[A-Za-z0-9_-]{16,128}$' }),
    counts: Type.Record(
      Type.String({ pattern: '^[a-z][a-z0-9_]{0,63}$' }),
      Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
      { maxProperties: 64, additionalProperties: false },
    ),
    evidence: Type.Array(SmtpEvidence, { maxItems: 100 }),
  },
  { additionalProperties: false },
)
export type SmtpReport = Static<typeof SmtpReport>

export const SmtpReportResult = Type.Object({
  /** `stored` (first report), `replaced` (newer generation) or `unchanged` (exact replay). */
  result: Type.Union([Type.Literal('stored'), Type.Literal('replaced'), Type.Literal('unchanged')]),
})
export type SmtpReportResult = Static<typeof SmtpReportResult>
