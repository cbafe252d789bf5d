/** GET /api/web-enforcement and PUT /api/web-enforcement/kill-switch (administrators, audited). */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { adminOf } from '../auth/guards.ts'
import type { AppContext } from '../context.ts'
import { formatMillis } from '../timestamps.ts'
import { setKillSwitch } from './service.ts'
import { automatedBlockCounts, readState } from './store.ts'

export async function enforcementStatus(ctx: AppContext) {
  const state = await readState(ctx.database.db)
  const perGate = await automatedBlockCounts(ctx.database.db)
  return {
    enforcement_mode: state.killSwitch ? ('disabled' as const) : ctx.web.mode,
    configured_enforcement_mode: ctx.web.mode,
    canary_nodes: [...ctx.web.canaryNodes],
    interval_window_seconds: ctx.web.windowMs / 1000,
    shadow_enabled: ctx.web.policy.enabled,
    kill_switch: {
      engaged: state.killSwitch,
      actor: state.actor === '' ? null : state.actor,
      updated_at: state.updatedMs === 0 ? null : formatMillis(state.updatedMs),
    },
    automated_blocks: [...perGate.values()].reduce((a, b) => a + b, 0),
  }
}

export function enforcementRoutes(app: HttpApp, ctx: AppContext) {
  app.get(
    '/api/web-enforcement',
    {
      onRequest: ctx.guards.requireAdmin,
      schema: { summary: 'Show the web enforcement mode, kill switch and automated block count' },
    },
    async () => enforcementStatus(ctx),
  )

  app.put(
    '/api/web-enforcement/kill-switch',
    {
      onRequest: ctx.guards.requireAdmin,
      schema: {
        summary: 'Engage or release the web enforcement kill switch',
        body: Type.Object({ engaged: Type.Boolean() }, { additionalProperties: false }),
      },
    },
    async (req) => {
      const { revoked } = await setKillSwitch(
        ctx.database.db,
        ctx.database.kind,
        req.body.engaged,
        `admin:${adminOf(req)}`,
      )
      return { ...(await enforcementStatus(ctx)), revoked }
    },
  )
}
