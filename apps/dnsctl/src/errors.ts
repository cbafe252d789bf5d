/**
 * Every error code dnsctl answers with (besides the kit's invalid_request, invalid_json,
 * not_found, method_not_allowed, payload_too_large). Each is documented in README.md.
 */
import { defineErrors } from '@gatehouse/kit'

export const errors = defineErrors({
  // Revisions (optimistic concurrency).
  revision_required: {
    status: 428,
    message: (what: string) => `${what} needs the current revision in If-Match or expected_revision`,
  },
  revision_mismatch: {
    status: 412,
    message: (given: string, current: string) => `revision ${given} is not current (current revision is ${current})`,
  },
  revision_disagreement: {
    status: 400,
    message: (header: string, body: string) =>
      `If-Match (${header}) and expected_revision (${body}) name different revisions`,
  },
  // Zone text and record rules (the spec's error list).
  invalid_zone_name: { status: 400, message: (why: string) => `invalid zone name: ${why}` },
  invalid_zone_text: { status: 400, message: (why: string) => why },
  invalid_record: { status: 400, message: (why: string) => why },
  invalid_ttl: { status: 400, message: (why: string) => why },
  unsupported_type: { status: 400, message: (why: string) => why },
  non_internet_class: { status: 400, message: (why: string) => why },
  include_refused: { status: 400, message: (why: string) => why },
  name_outside_zone: { status: 400, message: (why: string) => why },
  duplicate_record: { status: 400, message: (why: string) => why },
  cname_conflict: { status: 400, message: (why: string) => why },
  apex_violation: { status: 400, message: (why: string) => why },
  soa_change_forbidden: {
    status: 400,
    message: () => 'SOA records cannot be changed directly; the serial advances with every committed batch',
  },
  conflicting_changes: {
    status: 400,
    message: (rrset: string) => `the batch changes RRset ${rrset} more than once`,
  },
  rrset_not_found: { status: 409, message: (rrset: string) => `RRset ${rrset} does not exist` },
  zone_not_found: { status: 404, message: (zone: string) => `zone ${zone} does not exist` },
  revision_not_in_history: {
    status: 404,
    message: (zone: string, revision: string) => `the history of ${zone} holds no revision ${revision}`,
  },
  zone_is_secondary: {
    status: 409,
    message: (zone: string) => `zone ${zone} has role secondary: its RRsets are read-only`,
  },
  // Publication against Knot.
  publication_failed: {
    status: 503,
    message: (zone: string, why: string) => `publication of ${zone} failed and was rolled back: ${why}`,
  },
  // HA roles (ha/).
  read_only_secondary: {
    status: 423,
    message: (why: string) => `this dnsctl is read-only: ${why}`,
  },
  not_secondary: {
    status: 409,
    message: (role: string) => `only an HA secondary can be promoted; this dnsctl is ${role}`,
  },
  peer_still_writable: {
    status: 409,
    message: (peer: string, role: string) =>
      `the old primary at ${peer} still answers and is writable (role ${role}); stop it (or let it fence itself) before promoting`,
  },
  promotion_running: { status: 409, message: () => 'a promotion or demotion is already running' },
  not_primary: {
    status: 409,
    message: (role: string) => `only an HA primary with a configured peer can be demoted; this dnsctl is ${role}`,
  },
  demotion_refused: {
    status: 409,
    message: (why: string) => `demotion refused: ${why}; the pair would be left without a writable primary`,
  },
  promotion_failed: { status: 503, message: (why: string) => `the promotion failed: ${why}` },
  // Metrics history from the optional Prometheus upstream (history/prometheus.ts).
  metrics_upstream_unavailable: { status: 502, message: (why: string) => why },
  metrics_upstream_timeout: { status: 504, message: (why: string) => why },
  // External provider (provider/).
  provider_not_configured: {
    status: 503,
    message: (why: string) => `the external provider is not configured: ${why}`,
  },
  provider_token_unsafe: {
    status: 503,
    message: (file: string, why: string) => `the provider token file ${file} is refused: ${why}`,
  },
  zone_not_allowed: {
    status: 403,
    message: (zone: string) => `zone ${zone} is not in the provider allowlist`,
  },
  provider_zone_not_found: {
    status: 404,
    message: (zone: string) => `the provider has no zone ${zone} that this token can read`,
  },
  provider_timeout: { status: 504, message: (why: string) => why },
  provider_unavailable: { status: 502, message: (why: string) => why },
  provider_rejected: { status: 502, message: (why: string) => why },
  provider_permission_missing: {
    status: 403,
    message: (zone: string, permission: string, consequence: string) =>
      `the provider token lacks the ${permission} permission for zone ${zone}: ${consequence}`,
  },
  unsafe_change: {
    status: 409,
    message: (reasons: string) => `the change ${reasons}; repeat it with "force": true if that is intended`,
  },
  confirm_required: {
    status: 400,
    message: () => 'a provider change applies only with "confirm": true (POST .../plans shows it without writing)',
  },
  provider_change_failed: {
    status: 502,
    message: (zone: string, why: string) => `the provider change of ${zone} failed: ${why}`,
  },
  invalid_allowlist: { status: 400, message: (why: string) => why },
  // Blocklist configuration.
  invalid_blocklist_source: { status: 400, message: (why: string) => why },
  too_many_blocklist_sources: {
    status: 400,
    message: (n: number) => `${n} blocklist sources given; at most 32 are allowed`,
  },
  invalid_domain: { status: 400, message: (why: string) => why },
  // Web console (src/console/): sign-in, session and browser checks.
  console_disabled: {
    status: 409,
    message: () => 'the web console is not enabled: start dnsctl with --console-listen',
  },
  console_link_invalid: {
    status: 401,
    message: () => 'this sign-in link is unknown, expired or already used; run dnsctl console for a new one',
  },
  console_session_required: {
    status: 401,
    message: () => 'sign in to the console first: run dnsctl console on the server for a sign-in link',
  },
  csrf_token_invalid: {
    status: 403,
    message: () => 'the X-CSRF-Token header is missing or does not belong to this console session',
  },
  origin_mismatch: {
    status: 403,
    message: () => 'a console change must come from a console page of this origin',
  },
})

export type ErrorCode = keyof typeof errors
