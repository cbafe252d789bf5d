/**
 * Config fields of the external DNS provider (spread into config.ts's schema, which alone
 * reads the environment). See README "External provider".
 */
import { type ConfigOf, field } from '@gatehouse/kit/config.ts'
import { normalizeZoneName } from './zone-names.ts'

export const providerSchema = {
  zones: field.list({
    env: 'DNSCTL_PROVIDER_ZONES',
    flag: 'provider-zone',
    default: [],
    item: (s: string) => normalizeZoneName(s),
    doc: 'zone names the provider endpoints may read and change (comma-separated); the allowlist the console commits replaces it',
  }),
  tokenFile: field.string({
    env: 'DNSCTL_PROVIDER_TOKEN_FILE',
    flag: 'provider-token-file',
    doc: 'file holding the provider API token (root- or service-owned, mode 0600 or stricter: a file others can read is refused)',
  }),
  apiUrl: field.string({
    env: 'DNSCTL_PROVIDER_API_URL',
    flag: 'provider-api-url',
    default: 'https://api.cloudflare.com/client/v4',
    pattern: /^https:\/\/[^\s]+$/,
    patternDoc: 'an https:// URL',
    doc: 'base URL of the Cloudflare-style DNS records API',
  }),
  caFile: field.string({
    env: 'DNSCTL_PROVIDER_CA_FILE',
    flag: 'provider-ca-file',
    doc: 'PEM file of extra CA certificates trusted for the provider API (besides the system roots)',
  }),
  timeout: field.duration({
    env: 'DNSCTL_PROVIDER_TIMEOUT',
    flag: 'provider-timeout',
    default: '15s',
    min: '10ms',
    doc: 'deadline of one provider API request',
  }),
  batchLimit: field.int({
    env: 'DNSCTL_PROVIDER_BATCH_LIMIT',
    flag: 'provider-batch-limit',
    default: 200,
    min: 1,
    max: 100000,
    doc: 'most operations in one batch request (Cloudflare: 200 on the Free plan, 3500 on paid plans); a bigger change goes in several, in order',
  }),
  dnsPort: field.int({
    env: 'DNSCTL_PROVIDER_DNS_PORT',
    flag: 'provider-dns-port',
    default: 53,
    min: 1,
    max: 65535,
    doc: "port of the zone's assigned nameservers for the verification queries",
  }),
  dnsVerifyTimeout: field.duration({
    env: 'DNSCTL_PROVIDER_DNS_VERIFY_TIMEOUT',
    flag: 'provider-dns-verify-timeout',
    default: '20s',
    min: '10ms',
    doc: 'how long a change waits for the assigned nameservers to answer with the new records before reporting dns_verified:false',
  }),
}

/** `invalid`: paths of settings given with a bad value (reported already); a bad token file counts as set. */
export function providerProblems(
  raw: { provider: ConfigOf<typeof providerSchema> },
  invalid: ReadonlySet<string> = new Set(),
): string[] {
  if (invalid.has('provider.zones') || invalid.has('provider.tokenFile')) return []
  if (raw.provider.zones.length > 0 && raw.provider.tokenFile === undefined) {
    return ['provider: if provider.zones is set, provider.tokenFile (--provider-token-file) must be set']
  }
  return []
}
