/** The MCP SDK's own client over real HTTP, with an optional bearer token and extra headers. */
import { Client, type ClientOptions, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'

// biome-ignore lint/suspicious/noExplicitAny: structured tool output is read loosely in assertions
export type Structured = Record<string, any>

export interface McpSession {
  client: Client
  tools(): Promise<string[]>
  /** Call a tool; `ok` is false for an isError result, whose `error` is the coded error body. */
  call(
    name: string,
    args?: Record<string, unknown>,
  ): Promise<{ ok: boolean; out: Structured; error?: { code: string; message: string } }>
  close(): Promise<void>
}

/** `options` reach the SDK's Client (e.g. `versionNegotiation` for the 2026-07-28 protocol). */
export async function connectMcp(
  base: string,
  headers: Record<string, string>,
  options?: ClientOptions,
): Promise<McpSession> {
  const client = new Client({ name: 'artsvc-test', version: '1.0.0' }, options)
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } })
  await client.connect(transport)
  return {
    client,
    async tools() {
      return (await client.listTools()).tools.map((t) => t.name).sort()
    },
    async call(name, args = {}) {
      const r = await client.callTool({ name, arguments: args })
      const text = (r.content as { type: string; text?: string }[]).find((c) => c.type === 'text')?.text ?? '{}'
      if (r.isError) {
        const parsed = JSON.parse(text) as { error?: { code: string; message: string } }
        return { ok: false, out: {}, error: parsed.error ?? { code: 'unknown', message: text } }
      }
      return { ok: true, out: (r.structuredContent ?? {}) as Structured }
    },
    close: () => client.close(),
  }
}
