/**
 * Config fields of the optional Prometheus upstream of the metrics history (spread into
 * config.ts's schema, which alone reads the environment). See README "Metrics history".
 */
import { field } from '@gatehouse/kit/config.ts'

/** One PromQL label matcher: `name="value"`, `name!="value"`, `name=~"re"`, `name!~"re"`. */
const MATCHER = String.raw`[a-zA-Z_][a-zA-Z0-9_]*\s*(?:=~|!~|!=|=)\s*"(?:[^"\\\n]|\\.)*"`
/** Comma-separated matchers, or nothing: what may stand inside `{...}` of every fixed series. */
export const SELECTOR = new RegExp(String.raw`^(?:\s*${MATCHER}\s*(?:,\s*${MATCHER}\s*)*)?$`)

export const prometheusSchema = {
  url: field.url({
    env: 'DNSCTL_METRICS_PROMETHEUS_URL',
    flag: 'metrics-prometheus-url',
    protocols: ['http:', 'https:'],
    doc: "base URL of a Prometheus that scrapes kresd's metrics (its /api/v1/query_range answers the metrics history); unset: dnsctl samples the resolvers itself",
  }),
  selector: field.string({
    env: 'DNSCTL_METRICS_PROMETHEUS_SELECTOR',
    flag: 'metrics-prometheus-selector',
    default: '',
    pattern: SELECTOR,
    patternDoc: 'PromQL label matchers, e.g. job="kresd",site=~"ams.*"',
    doc: 'label matchers picking this resolver\'s series in Prometheus (added to every fixed query), e.g. job="kresd"',
  }),
  prefix: field.string({
    env: 'DNSCTL_METRICS_PROMETHEUS_PREFIX',
    flag: 'metrics-prometheus-prefix',
    default: '',
    pattern: /^(?:[a-zA-Z_:][a-zA-Z0-9_:]*)?$/,
    patternDoc: 'a metric-name prefix (letters, digits, _ and :)',
    doc: "kresd's http.prometheus.namespace: the prefix of its metric names (answer_total, answer_cached, answer_nxdomain, cache_count_entries)",
  }),
  timeout: field.duration({
    env: 'DNSCTL_METRICS_PROMETHEUS_TIMEOUT',
    flag: 'metrics-prometheus-timeout',
    default: '10s',
    min: '100ms',
    max: '2m',
    doc: 'deadline of one metrics-history request to Prometheus (also sent as its query timeout)',
  }),
}

/** Cross-field rules: a URL Prometheus paths can be appended to. */
export function prometheusProblems(raw: { metricsPrometheus: { url?: string | undefined } }): string[] {
  const url = raw.metricsPrometheus.url
  if (url === undefined) return []
  const u = new URL(url)
  const problems: string[] = []
  if (u.username || u.password) {
    problems.push(
      'metricsPrometheus.url: credentials in the URL are not supported (put an authenticating proxy on loopback)',
    )
  }
  if (u.search || u.hash) problems.push('metricsPrometheus.url: must not have a query string or fragment')
  return problems
}
