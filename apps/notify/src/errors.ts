/**
 * Every error code the notification service answers with (besides the kit's own codes:
 * invalid_request, invalid_json, unauthorized, forbidden, not_found, method_not_allowed,
 * payload_too_large, unsupported_media_type, internal, unavailable). Each code is
 * documented in README.md; a test checks it.
 */
import { defineErrors } from '@gatehouse/kit/errors.ts'

export const errors = defineErrors({
  invalid_card: { status: 400, message: (path: string, why: string) => `${path}: ${why}` },
  invalid_payload: { status: 400, message: (why: string) => why },
  invalid_message: { status: 400, message: (why: string) => why },
  invalid_cursor: { status: 400, message: () => 'before is not a cursor returned by this service' },
  invalid_stream_position: {
    status: 400,
    message: () => 'Last-Event-ID (or after) is not an event id sent by this stream: N-M',
  },
  hook_token_invalid: { status: 401, message: () => 'the hook token is unknown or revoked' },
  login_failed: { status: 401, message: () => 'unknown user, wrong password or disabled account' },
  session_required: { status: 401, message: () => 'sign in first' },
  admin_required: { status: 403, message: () => 'this needs an installation administrator' },
  role_required: {
    status: 403,
    message: (what: string) => `${what} needs the operator or channel_admin role on the channel`,
  },
  origin_mismatch: {
    status: 403,
    message: () => 'the request origin or host does not match the public URL of this service',
  },
  channel_not_found: { status: 404, message: (name: string) => `no channel ${JSON.stringify(name)}` },
  user_not_found: { status: 404, message: (name: string) => `no user ${JSON.stringify(name)}` },
  webhook_not_found: { status: 404, message: (id: string) => `no webhook ${JSON.stringify(id)}` },
  reader_token_not_found: { status: 404, message: (id: string) => `no reader token ${JSON.stringify(id)}` },
  notification_not_found: { status: 404, message: (id: string) => `no notification ${id}` },
  push_subscription_not_found: {
    status: 404,
    message: (id: string) => `no push subscription ${JSON.stringify(id)} of yours`,
  },
  invalid_push_subscription: { status: 400, message: (why: string) => `push subscription refused: ${why}` },
  push_subscription_limit: {
    status: 409,
    message: (max: number) => `at most ${max} push subscriptions per reader; revoke one first`,
  },
  channel_exists: { status: 409, message: (name: string) => `channel ${JSON.stringify(name)} already exists` },
  user_exists: { status: 409, message: (name: string) => `user ${JSON.stringify(name)} already exists` },
  webhook_revoked: { status: 409, message: (id: string) => `webhook ${JSON.stringify(id)} is revoked` },
  invalid_transition: { status: 409, message: (from: string, to: string) => `cannot move from ${from} to ${to}` },
  push_test_throttled: {
    status: 429,
    message: (seconds: number) => `one test push per 10 s; try again in ${seconds} s`,
  },
  login_throttled: {
    status: 429,
    message: (seconds: number) => `too many sign-in attempts; try again in ${seconds} s`,
  },
  action_key_unavailable: {
    status: 503,
    message: () =>
      'no action encryption key: set NOTIFY_ACTION_KEY (32 bytes, base64 or hex) so the first save can commit it',
  },
  action_target_not_found: { status: 404, message: (name: string) => `no action target ${JSON.stringify(name)}` },
  action_not_found: { status: 404, message: (index: number) => `this notification has no registered action ${index}` },
  invalid_action_target: { status: 400, message: (why: string) => why },
  idempotency_key_required: {
    status: 428,
    message: () => 'an Idempotency-Key header (1 to 200 visible ASCII characters) is required',
  },
  idempotency_key_reused: {
    status: 409,
    message: () => 'this Idempotency-Key was already used for another action',
  },
  action_in_progress: {
    status: 409,
    message: () => 'an invocation with this Idempotency-Key is still running; retry with the same key',
  },
  self_change_refused: { status: 409, message: (why: string) => why },
  last_admin: {
    status: 409,
    message: () => 'refused: this would leave no enabled human administrator',
  },
  password_not_local: {
    status: 409,
    message: (name: string) => `user ${JSON.stringify(name)} does not sign in with a local password`,
  },
  oidc_disabled: { status: 404, message: () => 'identity-provider sign-in is not configured' },
  oidc_failed: { status: 401, message: (why: string) => `identity-provider sign-in failed: ${why}` },
  desktop_login_failed: { status: 400, message: (why: string) => why },
  desktop_login_pending: { status: 428, message: () => 'not approved yet: poll again after the interval' },
  desktop_code_mismatch: {
    status: 400,
    message: (left: number) => `the code does not match this sign-in request (${left} attempts left)`,
  },
  desktop_throttled: {
    status: 429,
    message: (seconds: number) => `too many desktop sign-in requests; try again in ${seconds} s`,
  },
  import_rejected: { status: 409, message: (why: string) => `import refused, nothing was changed: ${why}` },
})

export type ErrorCode = keyof typeof errors
