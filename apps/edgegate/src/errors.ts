/** Every error code edgegate answers with (beside kit's); each is documented in the README. */
import { defineErrors } from '@gatehouse/kit/errors.ts'

export const errors = defineErrors({
  unauthorized: { status: 401, message: (why = 'credentials are missing or invalid') => why },
  node_inactive: { status: 403, message: () => 'this node is disabled' },
  // The node learns its own id and kind and what the endpoint wants: a gate registered under the
  // wrong kind (node add --kind) says so in its log instead of a bare 403.
  wrong_node_kind: {
    status: 403,
    message: (id: string, kind: string, wanted: readonly string[]) =>
      `node ${id} is registered as kind ${kind}; this endpoint is for ${wanted.join(' or ')} nodes (check with: edgegate node show ${id})`,
  },
  instance_mismatch: { status: 403, message: () => 'instance_id is not this node’s instance' },
  admin_required: { status: 403, message: () => 'an administrator is required' },
  node_required: { status: 403, message: () => 'this endpoint is for gate nodes; administrators cannot use it' },
  origin_mismatch: { status: 403, message: () => 'the Origin of this request is not this dashboard' },
  instance_id_mismatch: {
    status: 400,
    message: () => 'instance_id in the body must equal the instance_id query parameter',
  },
  invalid_timestamp: { status: 400, message: (field: string) => `${field} is not a valid RFC 3339 UTC timestamp` },
  invalid_ip: { status: 400, message: (field: string) => `${field} is not a valid IP address` },
  invalid_observation: { status: 400, message: (why: string) => why },
  metadata_too_large: { status: 413, message: (limit: number) => `encoded metadata exceeds ${limit} bytes` },
  invalid_report: { status: 400, message: (why: string) => why },
  smtp_report_stale: {
    status: 409,
    message: () => 'a different report with the same or a newer generation is stored for this namespace and listener',
  },
  stale_publisher_epoch: {
    status: 409,
    message: () => 'a newer publisher epoch was seen for this node; this publisher has lost its lease',
  },
  node_not_found: {
    status: 404,
    message: (id: string, kind?: string) =>
      kind === undefined
        ? `no node with instance_id ${id}`
        : `${id} is a ${kind} node: decisions are for sshgate and tlsgate nodes`,
  },
  invalid_fingerprint: { status: 400, message: (why: string) => why },
  decision_not_found: {
    status: 404,
    message: (instanceId: string, fingerprint: string) =>
      `node ${JSON.stringify(instanceId)} has no decision on fingerprint ${JSON.stringify(fingerprint)}`,
  },
  decision_missing_fields: { status: 400, message: () => 'give a status, a label, an expiry or several' },
  invalid_expiry: {
    status: 400,
    message: (text: string) =>
      `expires_in ${JSON.stringify(text)}: a duration from 1m to 8760h, written like 30m, 4h or 168h`,
  },
  invalid_window: { status: 400, message: (why: string) => why },
  invalid_pair: { status: 400, message: (why: string) => why },
  pair_not_found: { status: 404, message: () => 'no such pairing of a websignal node with a tlsgate node' },
  invalid_since: { status: 400, message: () => 'since is in the future' },
  label_too_long: { status: 400, message: (max: number) => `a label is at most ${max} characters` },
  label_invalid: {
    status: 400,
    message: () => 'a label may not contain control characters (escape sequences, line breaks, bidi overrides)',
  },
})

export type ErrorCode = keyof typeof errors
