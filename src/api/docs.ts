import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { HttpApiBuilder, HttpServerResponse, OpenApi } from "@effect/platform"
import { Effect } from "effect"
import { IncidentApi } from "./contract/definition.ts"
import { TAXII_DISCOVERY_PATH } from "./contract/openapi.ts"

/**
 * The API reference at /docs, working with no network beyond the service. It is the page of
 * @effect/platform's HttpApiScalar.layer (the Scalar bundle @effect/platform ships, inlined; nothing from a CDN),
 * with what that layer cannot say:
 * - `withDefaultFonts: false`: Scalar would otherwise load its 16 fonts from fonts.scalar.com, which a customer's
 *   network may not reach (and our CSP forbids); the page uses the system's fonts.
 * - no eval probe: the bundle's schema library tests `new Function("")` once; under the page's CSP (no
 *   'unsafe-eval') that probe is a reported violation. A script before the bundle answers it the way the CSP would
 *   (it throws) without trying, so the page reports none and takes its no-eval path as it does anyway.
 * - a link to the TAXII 2.1 server, which the HttpApi does not describe (it is a paragraph of the document's
 *   description too), as plain HTML before the reference, so it shows without JavaScript.
 * The page's CSP (api/edge.ts) allows inline scripts and styles and WebAssembly ('wasm-unsafe-eval'), on /docs only.
 */

// The Scalar bundle of @effect/platform (its internal module; the version is pinned by bun.lock and the browser test
// test/docs/docs.test.ts fails if it moves).
const require = createRequire(import.meta.url)
const scalarScript = (
  require(join(dirname(require.resolve("@effect/platform/HttpApiScalar")), "internal", "httpApiScalar.js")) as {
    javascript: string
  }
).javascript

/** JSON for a <script> element: nothing in it can close the element or end a JavaScript string. */
const scriptJson = (value: unknown) =>
  JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/[\u2028\u2029]/g, (c) => (c === "\u2028" ? "\\u2028" : "\\u2029"))

const htmlText = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c)

const NO_EVAL_PROBE = `(() => {
  const NativeFunction = window.Function
  window.Function = new Proxy(NativeFunction, {
    construct() { throw new EvalError("code generation from strings is disabled by this page's Content-Security-Policy") },
    apply() { throw new EvalError("code generation from strings is disabled by this page's Content-Security-Policy") },
  })
})()`

export const docsPage = (): string => {
  const spec = OpenApi.fromApi(IncidentApi)
  const configuration = { _integration: "html", withDefaultFonts: false, hideClientButton: false }
  return `<!doctype html>
<html>
  <head>
    <meta charset="utf-8" />
    <title>${htmlText(spec.info.title)}</title>
    <meta name="viewport" content="width=device-width, initial-scale=1" />
  </head>
  <body>
    <p id="taxii-link" style="margin: 0.5rem 1rem; font-family: system-ui, sans-serif">
      Threat intelligence as STIX 2.1 objects: the read-only <a href="${TAXII_DISCOVERY_PATH}">TAXII 2.1 server</a>
      (intel:read key, Bearer or HTTP Basic), described in the API guide, section "TAXII 2.1 for threat-intelligence
      platforms".
    </p>
    <script>${NO_EVAL_PROBE}</script>
    <script id="api-reference" type="application/json">
      ${scriptJson(spec)}
    </script>
    <script>
      document.getElementById('api-reference').dataset.configuration = JSON.stringify(${scriptJson(configuration)})
    </script>
    <script>${scalarScript}</script>
  </body>
</html>`
}

/** GET /docs on the API listener, built once. */
export const DocsLive = HttpApiBuilder.Router.use((router) =>
  Effect.suspend(() => {
    const response = HttpServerResponse.html(docsPage())
    return router.get("/docs", Effect.succeed(response))
  }),
)
