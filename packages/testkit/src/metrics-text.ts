/**
 * Reading Prometheus text exposition in tests and benches (what an app's `/metrics` answers).
 */

/**
 * The value of one metric series, or undefined when it is not there.
 *
 * @example metric(text, 'sshproxy_connection_results_total', { result: 'allowed' })
 * @example metric(text, 'notify_delivery_group_size_sum')
 */
export function metric(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.split(' ').at(-1))
  }
  return undefined
}
