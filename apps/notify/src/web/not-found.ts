/**
 * The page a browser gets at an address the client does not have (a mistyped or stale link):
 * the client's own look, a way home, status 404. API and hook paths keep the kit's coded JSON,
 * which their callers read. The page never repeats the address: a hook's address is its token.
 */
import type { NotFoundPage } from '@gatehouse/kit'
import { PAGE_HEADERS } from './routes.ts'

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Page not found · Notify</title>
<link rel="icon" href="/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/app.css">
<link rel="stylesheet" href="/access.css">
</head>
<body>
<main class="notice">
<h1>Page not found</h1>
<p>Notify has no page at this address. The link may be mistyped, cut short or out of date.</p>
<p><a class="button primary" href="/">Go to your notifications</a></p>
</main>
</body>
</html>
`

const MACHINE_PATHS = /^\/(api|hooks)(\/|$)/

/** For `HttpAppOptions.notFoundPage`: the page, or undefined for the API's and hooks' paths. */
export function notFoundPage(path: string): NotFoundPage | undefined {
  return MACHINE_PATHS.test(path) ? undefined : { html: PAGE, headers: PAGE_HEADERS }
}
