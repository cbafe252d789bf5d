/**
 * Alerts to the team's notification channel. The events someone has to act on (a node gone
 * silent and back, the TLS certificate near expiry or expired, a database restored behind its
 * gates) are POSTed to `--alert-url` the ntfy way: the text as the body, and `Title`,
 * `Priority` and `Tags` headers. Gatehouse's notify takes that at `/hooks/<token>`, and so does
 * an ntfy topic URL, so a team learns of a dark gate without a Prometheus setup.
 *
 * Best effort: one attempt with a 10 s deadline, redirects refused; a failure is logged (the
 * event's own log line is already written) and nothing queues, so an unreachable channel never
 * holds up the control plane.
 */
import { type Logger, requestNoRedirect } from '@gatehouse/kit'

export interface Alert {
  title: string
  message: string
  priority: 'default' | 'high' | 'urgent'
  tags: string[]
}

export type AlertSink = (alert: Alert) => void

/** A sink that POSTs to `url`, or does nothing without one. */
export function alertSink(url: string | undefined, logger: Pick<Logger, 'warn'>): AlertSink {
  if (url === undefined) return () => {}
  // The URL holds the hook token: logged by its origin only.
  const where = new URL(url).origin
  return (a) => {
    requestNoRedirect(url, {
      method: 'POST',
      headers: {
        'content-type': 'text/plain; charset=utf-8',
        // A header takes printable ASCII only (a file name could hold anything).
        title: `edgegate: ${a.title}`.replace(/[^\x20-\x7e]/g, '?').slice(0, 200),
        priority: a.priority,
        tags: ['edgegate', ...a.tags].join(','),
      },
      body: a.message,
      timeoutMs: 10_000,
      maxBytes: 64 * 1024,
    }).catch((err) => logger.warn({ alert: a.title, to: where, reason: (err as Error).message }, 'alert not delivered'))
  }
}
