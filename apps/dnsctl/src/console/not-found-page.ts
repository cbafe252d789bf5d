/**
 * The console's "not found" page: what a browser's navigation on the console listener gets at
 * an address no route takes (the kit's `notFoundPage`, status 404), in the console's own shell:
 * its stylesheet (light and dark), its header, and a link back to the console. It is a fixed
 * text: the address asked for is not echoed (nothing a link's author wrote reaches the page),
 * and it carries no script, so the console's CSP holds as on every other page.
 *
 * API paths keep the coded JSON answer, as does the API listener as a whole (server.ts).
 */
import type { NotFoundPage } from '@gatehouse/kit'
import { PAGE_HEADERS } from './csp.ts'
import { CONSOLE_PREFIX } from './guard.ts'

/** Addresses whose misses are API misses, answered in JSON even to a browser. */
const API_PREFIXES = ['/v1/', '/api/']

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Page not found · dnsctl console</title>
<link rel="icon" href="${CONSOLE_PREFIX}/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${CONSOLE_PREFIX}/app.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="${CONSOLE_PREFIX}/">dnsctl</a>
</header>
<main id="main" tabindex="-1">
<section class="not-found">
<h1>Page not found</h1>
<p>The console has no page at this address. It may have been mistyped, or the link that led here may be out of date.</p>
<p><a href="${CONSOLE_PREFIX}/">Go to the console</a></p>
</section>
</main>
</body>
</html>
`

/** The page for `path`, or undefined where the JSON error must stay. */
export function consoleNotFoundPage(path: string): NotFoundPage | undefined {
  if (path === '/v1' || path === '/api' || API_PREFIXES.some((p) => path.startsWith(p))) return undefined
  return { html: PAGE, headers: PAGE_HEADERS }
}
