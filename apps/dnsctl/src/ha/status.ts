/** The wire shape of GET /v1/status/ha (TypeBox: the OpenAPI document and the types come from it). */
import { type Static, Type } from 'typebox'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()])

export const Role = Type.Union([Type.Literal('standalone'), Type.Literal('primary'), Type.Literal('secondary')])
export type HaRole = Static<typeof Role>

export const WriteMode = Type.Union([Type.Literal('read-write'), Type.Literal('read-only')])
export type WriteModeValue = Static<typeof WriteMode>

export const Vip = Type.Object({
  address: Nullable(Type.String()),
  owned: Nullable(Type.Boolean()),
  interface: Nullable(Type.String()),
  error: Type.Optional(Type.String()),
})

export const ZoneReplication = Type.Object({
  zone: Type.String(),
  /** SOA serial the primary's knotd answers (null: no answer). */
  primary_serial: Nullable(Type.Integer()),
  secondary_serial: Nullable(Type.Integer()),
  in_sync: Type.Boolean(),
  /** Seconds since the secondary was first seen behind this primary serial (0 when in sync). */
  lag_seconds: Nullable(Type.Number()),
})
export type ZoneReplicationItem = Static<typeof ZoneReplication>

export const ReplicationState = Type.Union([
  Type.Literal('not_configured'),
  Type.Literal('in_sync'),
  Type.Literal('lagging'),
  Type.Literal('peer_unreachable'),
])

export const LocalStatus = Type.Object({
  role: Role,
  write_mode: WriteMode,
  read_only_reason: Nullable(Type.String()),
  epoch: Type.Integer(),
  role_changed_at: Nullable(Type.String()),
  vip: Vip,
  replication: Type.Object({
    state: ReplicationState,
    checked_at: Type.String(),
    zones_in_sync: Type.Integer(),
    max_lag_seconds: Type.Number(),
    zones: Type.Array(ZoneReplication),
    /** With `peer_unreachable`: why the peer's knotd did not answer (refused, or no answer in time). */
    error: Type.Optional(Type.String()),
  }),
  snapshot: Type.Object({
    /** Zones this node serves (managed on a primary, replicated on a secondary). */
    zones: Type.Integer(),
    /** Primary: the newest committed publication; secondary: when every zone was last in sync. */
    last_at: Nullable(Type.String()),
  }),
  checked_at: Type.String(),
})
export type LocalHaStatus = Static<typeof LocalStatus>

export const PeerStatus = Type.Object({
  api: Nullable(Type.String()),
  knot: Nullable(Type.String()),
  reachable: Type.Boolean(),
  latency_ms: Nullable(Type.Number()),
  checked_at: Type.String(),
  error: Nullable(Type.String()),
  status: Nullable(LocalStatus),
})

export const HaStatusBody = Type.Object({ ...LocalStatus.properties, peer: Nullable(PeerStatus) })
export type HaStatus = Static<typeof HaStatusBody>

export const PromoteBody = Type.Union([
  Type.Object({ reason: Type.Optional(Type.String({ maxLength: 500 })) }, { additionalProperties: false }),
  Type.Null(),
])

export const PromoteResult = Type.Object({
  role: Role,
  epoch: Type.Integer(),
  zones: Type.Array(Type.Object({ zone: Type.String(), serial: Type.Integer(), revision: Type.String() })),
  warnings: Type.Array(Type.String()),
})
export type PromoteResultBody = Static<typeof PromoteResult>

export const DemoteResult = Type.Object({ role: Role, epoch: Type.Integer(), zones: Type.Array(Type.String()) })

export const HaEvent = Type.Object({
  at: Type.String(),
  action: Type.String(),
  actor: Type.String(),
  request_id: Type.String(),
  outcome: Type.String(),
  from_role: Type.String(),
  to_role: Type.String(),
  epoch: Type.Integer(),
  detail: Type.Record(Type.String(), Type.Unknown()),
})
