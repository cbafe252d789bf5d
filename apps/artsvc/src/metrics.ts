/** artsvc's own metrics, beside the kit's HTTP and process metrics. No ids, subjects or tokens as labels. */
import type { AppMetrics } from '@gatehouse/kit'

export function artsvcMetrics(m: AppMetrics) {
  return {
    publishes: m.counter('publishes_total', 'Versions published'),
    bundleRejections: m.counter('bundle_rejections_total', 'Bundles refused at commit, by reason', ['reason']),
    shareOpenings: m.counter('share_openings_total', 'Share link openings, by result', ['result']),
    mcpToolCalls: m.counter('mcp_tool_calls_total', 'MCP tool calls, by tool and result', ['tool', 'result']),
    maintenanceRemoved: m.counter('maintenance_removed_total', 'Items removed by maintenance, by kind', ['kind']),
  }
}

export type ArtsvcMetrics = ReturnType<typeof artsvcMetrics>
