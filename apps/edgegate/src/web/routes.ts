/** GET /api/web-candidates (administrators): the simulation-only candidate report. */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import type { ServeConfig } from '../config.ts'
import type { AppContext } from '../context.ts'
import { toDecision } from '../decisions/service.ts'
import type { EnforcementSettings } from '../enforcement/service.ts'
import { coverage, effectiveMode } from '../enforcement/service.ts'
import { formatMillis } from '../timestamps.ts'
import type { Candidate } from './candidates.ts'
import { buildReport, reportInterval } from './service.ts'

/** The `--web-*` flags as the services use them. */
export function webSettings(config: ServeConfig): EnforcementSettings {
  return {
    mode: config.web_enforcement_mode,
    canaryNodes: config.web_enforcement_canary_nodes ?? [],
    windowMs: config.web_candidate_window,
    policy: {
      enabled: config.web_shadow_enabled,
      minNetworks: config.web_shadow_min_networks,
      minSignals: config.web_shadow_min_signals,
      minErrorRatio: config.web_shadow_min_error_ratio,
      requireMultiScope: config.web_shadow_require_multi_scope,
      proposedTtlMs: config.web_shadow_proposed_ttl,
    },
  }
}

/** The wire form of a candidate. */
export function candidateJson(c: Candidate, covered: boolean) {
  const { first_ms, last_ms, ...evidence } = c.evidence
  return {
    instance_id: c.instance_id,
    fingerprint: c.fingerprint,
    ...evidence,
    first_at: formatMillis(first_ms),
    last_at: formatMillis(last_ms),
    decision: c.decision
      ? {
          ...toDecision(c.decision),
          source: c.decision.source,
          expires_at: c.decision.expires_ms === null ? null : formatMillis(Number(c.decision.expires_ms)),
        }
      : null,
    enforcement_covered: covered,
    ...(c.shadow
      ? {
          shadow_status: c.shadow.status,
          shadow_reasons: c.shadow.reasons,
          proposed_expires_at:
            c.shadow.proposedExpiresMs === undefined ? null : formatMillis(c.shadow.proposedExpiresMs),
        }
      : {}),
  }
}

export function webRoutes(app: HttpApp, ctx: AppContext) {
  app.get(
    '/api/web-candidates',
    {
      onRequest: ctx.guards.requireAdmin,
      schema: {
        summary: 'Report web block candidates (simulation only)',
        querystring: Type.Object(
          {
            window: Type.Optional(Type.String({ maxLength: 64 })),
            since: Type.Optional(Type.String({ maxLength: 64 })),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (req) => {
      const now = Date.now()
      const interval = reportInterval(req.query, ctx.web.windowMs, now)
      const report = await buildReport(ctx.database.db, ctx.database.kind, interval, ctx.web.policy, now)
      const mode = await effectiveMode(ctx.database.db, ctx.web.mode)
      const covered = await coverage(ctx.database.db, mode, ctx.web.canaryNodes)
      return {
        from: formatMillis(interval.fromMs),
        to: formatMillis(interval.toMs),
        window_seconds: interval.windowMs / 1000,
        enforcement_mode: mode,
        configured_enforcement_mode: ctx.web.mode,
        shadow_enabled: ctx.web.policy.enabled,
        candidates: report.candidates.map((c) => candidateJson(c, covered(c.instance_id))),
        truncated: report.truncated,
      }
    },
  )
}
