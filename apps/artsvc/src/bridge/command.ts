/** `artsvc mcp-bridge [--listen 127.0.0.1:18101] [--url https://…]`: run the bridge until a signal (flags parsed by cli/program.ts). */
import { createLogger, loadTlsMaterial, runMain } from '@gatehouse/kit'
import { loadBridgeConfig } from '../config.ts'
import { runMcpBridge } from './mcp-bridge.ts'

export async function mcpBridgeCommand(flags: Record<string, unknown>): Promise<void> {
  await runMain({ name: 'artsvc mcp-bridge' }, async () => {
    const config = loadBridgeConfig(flags)
    const bridge = await runMcpBridge({
      listen: config.listen,
      target: config.url,
      tls: loadTlsMaterial({
        cert: config.clientCert,
        key: config.clientKey,
        ...(config.caFile ? { ca: config.caFile } : {}),
      }),
      log: createLogger({ name: 'artsvc-mcp-bridge', level: config.logLevel }),
    })
    return () => bridge.close()
  })
}
