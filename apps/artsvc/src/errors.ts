/**
 * Every error code artsvc answers with (besides the kit's own: invalid_request,
 * invalid_json, unauthorized, forbidden, not_found, method_not_allowed, payload_too_large,
 * unsupported_media_type, internal, not_ready). Each is documented in README.md; a test
 * checks that.
 */
import { defineErrors, RETRY_SOON } from '@gatehouse/kit'

export const errors = defineErrors({
  misdirected_request: { status: 421, message: () => 'this server does not serve the requested host' },
  wrong_origin: { status: 404, message: () => 'no such resource on this origin' },
  origin_mismatch: {
    status: 403,
    message: () => 'cross-origin request refused: the Origin header must be the management origin',
  },
  authentication_required: { status: 401, message: () => 'sign in or present a bearer access token' },
  token_invalid: { status: 401, message: (why: string) => `access token rejected: ${why}` },
  insufficient_scope: { status: 403, message: (scope: string) => `access token lacks the scope ${scope}` },
  delegation_refused: {
    status: 403,
    message: () => 'X-Gateway-OAuth-Subject is accepted only with the configured gateway service token',
  },
  delegated_user_unknown: {
    status: 403,
    message: () => 'the delegated subject is not a known user (users must sign in once)',
  },
  inline_bundle_too_large: {
    status: 413,
    message: (limit: number) =>
      `the inline bundle exceeds ${limit} bytes: use artsvc_create_upload, PUT the ZIP to its upload_url, then artsvc_commit_upload`,
  },
  viewer_recipient_missing: {
    status: 409,
    message: (subject: string) =>
      `publication rolled back: ARTSVC_PUBLISHER_VIEWERS names ${subject}, who is no longer a user`,
  },
  branding_invalid: { status: 400, message: (why: string) => `theme rejected: ${why}` },
  theme_limit: {
    status: 409,
    message: (max: number) => `at most ${max} themes can be saved; delete an inactive theme first`,
  },
  theme_not_found: { status: 404, message: () => 'no such theme' },
  theme_active: { status: 409, message: () => 'the active theme cannot be deleted; activate another theme first' },
  image_not_found: { status: 404, message: () => 'no such branding image' },
  mcp_unavailable: {
    status: 404,
    message: () => 'the MCP endpoint is off: set ARTSVC_OIDC_ISSUER and ARTSVC_OAUTH_AUDIENCE',
  },
  admin_required: { status: 403, message: () => 'administrator access is required' },
  access_denied: { status: 403, message: (what: string) => `not allowed to ${what}` },
  artifact_not_found: { status: 404, message: () => 'no such artifact' },
  version_not_found: { status: 404, message: () => 'no such version' },
  user_not_found: {
    status: 404,
    message: () => 'no such user (users must sign in once before they can be granted access)',
  },
  upload_token_required: {
    status: 401,
    message: () => 'send the upload token in X-Artsvc-Upload-Token or Authorization: Upload <token>',
  },
  upload_token_invalid: { status: 401, message: () => 'upload token is not valid for this upload' },
  token_in_query: { status: 400, message: () => 'tokens and query strings are not accepted here; use a header' },
  upload_expired: { status: 410, message: () => 'the upload session has expired' },
  upload_not_received: { status: 409, message: () => 'no bundle has been uploaded to this session yet' },
  upload_committed: { status: 409, message: () => 'this upload has already been committed' },
  upload_in_progress: {
    status: 409,
    message: () =>
      'a bundle is being received for this session; if that upload was cut off (a crash, a dropped connection), PUT the bundle again',
  },
  bundle_too_large: { status: 413, message: (limit: number) => `the bundle exceeds the limit of ${limit} bytes` },
  bundle_invalid: { status: 422, message: (why: string) => `bundle rejected: ${why}` },
  invalid_entrypoint: { status: 400, message: (why: string) => `entrypoint ${why}` },
  share_invalid: { status: 400, message: (why: string) => why },
  share_not_found: { status: 404, message: () => 'no such share' },
  share_unavailable: { status: 410, message: (why: string) => `this share link ${why}` },
  share_session_required: { status: 401, message: () => 'open the share link first' },
  ticket_invalid: { status: 403, message: () => 'viewer ticket is invalid or expired; reload the viewer' },
  file_not_found: { status: 404, message: () => 'no such file in this bundle' },
  range_not_satisfiable: {
    status: 416,
    message: (size: number) => `the range asked for starts past the end of the file (${size} bytes)`,
  },
  login_unavailable: {
    status: 404,
    message: (mode: string) => `sign-in through this service is off (auth mode ${mode})`,
  },
  login_failed: { status: 400, message: (why: string) => `sign-in failed: ${why}` },
  edge_assertion_invalid: { status: 401, message: (why: string) => `edge access assertion rejected: ${why}` },
  identity_provider_unavailable: {
    status: 503,
    message: () => 'the identity provider or its key set is unreachable',
    headers: RETRY_SOON,
  },
  storage_unavailable: { status: 503, message: () => 'artifact storage is unavailable', headers: RETRY_SOON },
})

export type ErrorCode = keyof typeof errors
