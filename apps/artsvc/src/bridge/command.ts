/** `artsvc mcp-bridge [--listen 127.0.0.1:18101] [--url https://…]`: run the bridge until a signal. */
import { createLogger, describeSchema, loadTlsMaterial, runMain } from '@gatehouse/kit'
import { bridgeSchema, loadBridgeConfig } from '../config.ts'
import { runMcpBridge } from './mcp-bridge.ts'

export async function mcpBridgeCommand(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(
      `usage: artsvc mcp-bridge [--listen 127.0.0.1:18101] [--url https://artifacts.example.com]\n\nsettings:\n${describeSchema(bridgeSchema).join('\n')}\n`,
    )
    return
  }
  await runMain({ name: 'artsvc mcp-bridge' }, async () => {
    const config = loadBridgeConfig(argv)
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
