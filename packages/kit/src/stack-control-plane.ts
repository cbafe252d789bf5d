/**
 * For a gate's `npm start` (apps/sshproxy/stack.ts, apps/tlsgate/stack.ts): the control plane it
 * syncs with when the stack's edgegate runs. edgegate's stack registers each demo gate as a node
 * and keeps the node's credentials and its CA under its own data folder.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { StackContext } from './stack.ts'

export interface StackControlPlane {
  /** The gate's `control_plane` section, without the token. */
  config: Record<string, unknown>
  /** The node's bearer token, for the gate's environment: config.json holds no secret. */
  token: string
  url: string
  instance: string
}

/**
 * The control plane for the node whose id and token edgegate's `credentials.json` keeps under
 * `keys`, or undefined (with a line saying why when edgegate runs) for local verdicts only.
 * @example stackControlPlane(ctx, { id: 'tlsgateId', token: 'tlsgateToken' })
 */
export function stackControlPlane(
  ctx: StackContext,
  keys: { id: string; token: string },
): StackControlPlane | undefined {
  const edgegate = ctx.started.edgegate
  if (!edgegate) return undefined
  const dir = join(ctx.dataDir, '..', 'edgegate')
  const file = join(dir, 'credentials.json')
  const ca = join(dir, 'tls', 'ca.crt')
  if (!existsSync(file) || !existsSync(ca)) {
    ctx.log(`edgegate is running but ${file} or ${ca} is missing: sync disabled`)
    return undefined
  }
  const c = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string | undefined>
  const [id, token] = [c[keys.id], c[keys.token]]
  const url = edgegate.urls.api
  if (!id || !token || !url) {
    ctx.log(`${file} has no ${keys.id}/${keys.token} (or edgegate printed no api URL): sync disabled`)
    return undefined
  }
  // A short interval makes a decision or an approval on the dashboard reach the gate within
  // seconds in the demo.
  return { config: { url, instance_id: id, ca, sync_interval: '5s' }, token, url, instance: id }
}
