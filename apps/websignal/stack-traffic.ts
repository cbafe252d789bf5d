/**
 * The demo's web traffic when the stack runs the TLS gate: HTTPS requests through the gate to
 * its demo nginx, each from a loopback address of its own (Linux answers on all of 127.0.0.0/8,
 * so a client may bind any 127.x.y.z), which the gate sees, passes on with PROXY protocol and
 * nginx writes in the access log websignal tails. Ordinary visitors ask for the site's pages; a
 * scanner probes for secrets every few seconds. Both ends of edgegate's web evidence then come
 * from the same connections: the gate's sighting (fingerprint, address, SNI) and websignal's
 * signal (address, host).
 *
 * The scanner sends a ClientHello of its own (other cipher list, no ALPN), so its fingerprint
 * differs from the visitors': blocking it at the gate refuses the scanner and nobody else.
 * Every connection is a new one without session resumption, so each client keeps one
 * fingerprint (a resumed TLS 1.3 hello carries one more extension).
 *
 * None of it uses 127.0.0.1, which stays the address of whoever tries the gate by hand.
 */
import { readFileSync } from 'node:fs'
import { request } from 'node:https'

/** Visitors' addresses: one network, twelve clients. */
export const VISITORS = Array.from({ length: 12 }, (_, i) => `127.0.10.${i + 1}`)
/**
 * The scanner's addresses, in turn: six clients in two /24 networks, one tool (one fingerprint),
 * the pattern edgegate's shadow policy looks for (`--web-shadow-min-networks`, default 2).
 */
export const SCANNERS = ['127.0.66.1', '127.0.66.2', '127.0.66.3', '127.0.67.1', '127.0.67.2', '127.0.67.3']

export const VISITOR_PAGES = ['/', '/about/', '/blog/hello/', '/static/app.css', '/img/logo.svg']
/** Each matches websignal's suspicious-URI lists (patterns/*.txt); nginx answers 404. */
export const SCANNER_PROBES = ['/.env', '/.git/config', '/wp-login.php', '/phpmyadmin/', '/adminer.php', '/backup.sql']

/** A visitor every second; a scanner burst every fifth second. */
const VISIT_MS = 1000
const SCAN_EVERY = 5
const REQUEST_TIMEOUT_MS = 10_000

// Visitors: Node's default cipher list with ALPN, as a browser offers it. The scanner: a short
// list of its own and no ALPN (TLS 1.3 and, for a TLS 1.2 server, the ECDSA suite of the
// demo's P-256 certificate).
const VISITOR_TLS = { ALPNProtocols: ['http/1.1'] }
const SCANNER_TLS = {
  ciphers: 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:ECDHE-ECDSA-AES256-GCM-SHA384',
}

export interface DemoTrafficOptions {
  /** The gate's listener. */
  host: string
  port: number
  /** The SNI (and certificate name) of the demo site: the host of the gate's sightings. */
  servername: string
  /** The demo site's certificate (self-signed), trusted for these requests only. */
  certFile: string
  log(line: string): void
}

export interface DemoTraffic {
  stop(): Promise<void>
}

/** A timeout says nothing about the gate's verdict (a busy machine): it changes no state. */
type Outcome = 'answered' | 'refused' | 'timeout'

/** One GET on a new connection from `localAddress`; resolves with the outcome, never rejects. */
function get(
  o: DemoTrafficOptions,
  ca: Buffer,
  localAddress: string,
  path: string,
  tls: object,
  userAgent: string,
): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: o.host,
        port: o.port,
        servername: o.servername,
        path,
        localAddress,
        ca,
        agent: false,
        headers: { 'user-agent': userAgent, connection: 'close' },
        ...tls,
      },
      (res) => {
        res.resume()
        // 'close' comes after 'end', after an abort and after a timeout alike: the stop waits on it.
        res.on('close', () => resolve(res.complete ? 'answered' : 'refused'))
        res.on('error', () => {})
      },
    )
    req.setTimeout(REQUEST_TIMEOUT_MS, () => {
      resolve('timeout')
      req.destroy()
    })
    // A blocked fingerprint is refused with a TLS alert; a gate that is down refuses the connection.
    req.on('error', () => resolve('refused'))
    req.end()
  })
}

/**
 * Start sending the demo traffic; `stop()` ends it and waits for the requests in flight. A
 * client that the gate starts or stops refusing is logged once per change (for the scanner:
 * its fingerprint was blocked, or unblocked).
 */
export function startDemoTraffic(o: DemoTrafficOptions): DemoTraffic {
  const ca = readFileSync(o.certFile)
  const inFlight = new Set<Promise<unknown>>()
  const last: Record<'visitors' | 'scanner', 'answered' | 'refused' | undefined> = {
    visitors: undefined,
    scanner: undefined,
  }
  const note = (who: 'visitors' | 'scanner', outcome: Outcome) => {
    if (outcome === 'timeout') return
    const before = last[who]
    last[who] = outcome
    if (before === outcome) return
    if (outcome === 'refused') o.log(`demo ${who}: the gate at ${o.host}:${o.port} refuses their connections`)
    else if (before === 'refused') o.log(`demo ${who}: the gate at ${o.host}:${o.port} lets them through again`)
  }
  const track = (p: Promise<unknown>) => {
    inFlight.add(p)
    void p.finally(() => inFlight.delete(p))
  }
  let tick = 0
  let stopped = false
  const scan = async (address: string) => {
    // One probe after the other, as a scanner walks its list.
    for (const probe of SCANNER_PROBES) {
      if (stopped) return
      const outcome = await get(o, ca, address, probe, SCANNER_TLS, 'demo-scanner/1.0')
      note('scanner', outcome)
      if (outcome !== 'answered') return
    }
  }
  const step = () => {
    const visitor = VISITORS[tick % VISITORS.length]!
    const page = VISITOR_PAGES[tick % VISITOR_PAGES.length]!
    track(
      get(o, ca, visitor, page, VISITOR_TLS, 'Mozilla/5.0 (X11; Linux x86_64) demo-visitor').then((r) =>
        note('visitors', r),
      ),
    )
    if (tick % SCAN_EVERY === 0) track(scan(SCANNERS[(tick / SCAN_EVERY) % SCANNERS.length]!))
    tick++
  }
  step()
  const timer = setInterval(step, VISIT_MS)
  return {
    async stop() {
      stopped = true
      clearInterval(timer)
      await Promise.all([...inFlight])
    },
  }
}
