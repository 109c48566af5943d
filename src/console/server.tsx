import { randomBytes } from "node:crypto"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { Cause, Effect, Layer, Option } from "effect"
import { ApiKeyAdmin } from "../admin/ApiKeyAdmin.ts"
import { AdminActor, type AdminActorValue, orgUser } from "../admin/actor.ts"
import { ChannelAdmin } from "../admin/ChannelAdmin.ts"
import { type AdminError, isAdminError } from "../admin/errors.ts"
import { IncidentAdmin } from "../admin/IncidentAdmin.ts"
import { SensorAdmin } from "../admin/SensorAdmin.ts"
import { DEVICE_COOKIE, DEVICE_COOKIE_DAYS, prepareSignIn, SignIn } from "../admin/SignIn.ts"
import { UserAdmin } from "../admin/UserAdmin.ts"
import { sha256 } from "../domain/crypto.ts"
import { EVENT_TYPE_NAMES } from "../domain/eventTypes.ts"
import { isId } from "../domain/ids.ts"
import { INCIDENT_EVENTS_SHOWN } from "../domain/models.ts"
import { parseTimestamp } from "../domain/time.ts"
import { AppConfig, sealerOf } from "../platform/config.ts"
import { clientIp } from "../platform/http/clientIp.ts"
import { AuditRepo } from "../repos/AuditRepo.ts"
import { ConsoleUsersRepo, type SessionRow } from "../repos/ConsoleUsersRepo.ts"
import { EventsRepo } from "../repos/EventsRepo.ts"
import { IncidentsRepo } from "../repos/IncidentsRepo.ts"
import { presentEvent, presentIncident, presentIncidentSummary } from "../repos/present.ts"
import { ASSETS } from "./assets.ts"
import { ConsoleReads } from "./ConsoleReads.ts"
import {
  checkRequest,
  formEntries,
  formFields,
  html,
  isCrossSite,
  MAX_BODY_BYTES,
  redactPath,
  SECURITY_HEADERS,
  SERVER_MAX_BODY_BYTES,
  safeNext,
  seeOther,
  tokensEqual,
} from "./http.ts"
import { HTTPS_REQUIRED_TEXT, HTTPS_REQUIRED_TITLE, httpsRequired } from "./httpsRequired.ts"
import { MessagePage, NotFoundPage, SetPasswordPage, SignInPage } from "./pages/auth.tsx"
import type { Flash, Viewer } from "./pages/components.tsx"
import { EventsPage } from "./pages/events.tsx"
import { IncidentPage, IncidentsPage } from "./pages/incidents.tsx"
import { OverviewPage } from "./pages/overview.tsx"
import { SensorPage, SensorsPage } from "./pages/sensors.tsx"
import { AlertsPage, ApiSettingsPage, AuditPage, DeliveryLogPage, RevokeKeyPage, UsersPage } from "./pages/settings.tsx"

/** D27: the session cookie; `__Host-` binds it to this host, Secure, Path=/ and no Domain. */
export const SESSION_COOKIE = "__Host-session"
/** Sign-in and set-password forms have no session yet: a double-submit token in its own cookie (login CSRF). */
const FORM_COOKIE = "__Host-form"
const PAGE_SIZE = 50
const FLASH_TTL_MS = 10 * 60_000

interface SignedIn extends SessionRow {
  readonly token: string
  readonly viewer: Viewer & { readonly userId: string }
  /** The acting user the admin services check (their organization and role). */
  readonly actor: AdminActorValue
}

const cookieOptions = { httpOnly: true, secure: true, sameSite: "lax" as const, path: "/" }
/** D27: the known-device cookie (Accounts.ts DEVICE_COOKIE), sent only with this site's own requests. */
const deviceCookieOptions = {
  httpOnly: true,
  secure: true,
  sameSite: "strict" as const,
  path: "/",
  maxAge: `${DEVICE_COOKIE_DAYS} days` as const,
}

/** ?after= of the incident and event lists: the keyset position as `<ms>.<id>` (org-scoped in SQL, D7). */
const encodeAfter = (time: Date, id: string) => `${time.getTime()}.${id}`
const decodeAfter = (text: string | undefined, kind: "incident" | "event") => {
  if (text === undefined) return undefined
  const match = /^(\d{1,15})\.(.+)$/.exec(text)
  if (!match || !isId(kind, match[2] as string)) return undefined
  return { time: new Date(Number(match[1])), id: match[2] as string }
}

/** D26: an unknown, used or expired set-password link, for GET and POST alike. */
const linkExpired = () =>
  html(
    <MessagePage
      title="Link expired"
      text="This link has expired or was already used. Ask an administrator for a new one (Settings → Users, or `bun run admin user reset`)."
    />,
    410,
  )
const notFound = (viewer?: Viewer) => html(<NotFoundPage viewer={viewer} />, 404)
const forbidden = (text: string, viewer?: Viewer) =>
  html(<MessagePage title="Not allowed" text={text} viewer={viewer} />, 403)
const tooLarge = () =>
  html(
    <MessagePage title="Too large" text={`A console request body may hold at most ${MAX_BODY_BYTES / 1024} KiB.`} />,
    413,
    { connection: "close" },
  )
const badRequest = () =>
  html(
    <MessagePage
      title="Bad request"
      text="This request holds a value the console does not accept (a control character, or a value too long)."
    />,
    400,
  )

const makeRouter = Effect.gen(function* () {
  const config = yield* AppConfig
  const accounts = yield* SignIn
  const keyAdmin = yield* ApiKeyAdmin
  const sensorAdmin = yield* SensorAdmin
  const channelAdmin = yield* ChannelAdmin
  const userAdmin = yield* UserAdmin
  const incidentAdmin = yield* IncidentAdmin
  const users = yield* ConsoleUsersRepo
  const incidents = yield* IncidentsRepo
  const events = yield* EventsRepo
  const reads = yield* ConsoleReads
  const audit = yield* AuditRepo
  const sealer = sealerOf(config)
  prepareSignIn()
  const appOrigin = new URL(config.appUrl).origin
  const apiUrl = config.baseUrl ?? `http://localhost:${config.port}`

  const request = HttpServerRequest.HttpServerRequest
  const ipOf = (req: HttpServerRequest.HttpServerRequest) =>
    clientIp(Option.getOrUndefined(req.remoteAddress), req.headers["x-forwarded-for"], config.trustProxy)

  /** The signed-in session; `touch: false` for background reads that must not keep a session alive (D27). */
  const sessionOf = (options: { readonly touch: boolean }) =>
    Effect.gen(function* () {
      const req = yield* request
      const token = req.cookies[SESSION_COOKIE]
      if (token === undefined) return Option.none<SignedIn>()
      const found = yield* accounts.session(token, options)
      return Option.map(
        found,
        (s): SignedIn => ({
          ...s,
          token,
          viewer: { email: s.email, role: s.role, csrfToken: s.csrfToken, userId: s.userId },
          actor: orgUser({ id: s.userId, ip: ipOf(req), orgId: s.orgId, role: s.role }),
        }),
      )
    })
  const currentSession = sessionOf({ touch: true })

  /** To sign-in and back here after it; a cookie that no longer opens a session says so on the sign-in page. */
  const toSignIn = Effect.map(request, (req) => {
    const url = new URL(req.url, "http://console")
    const expired = req.cookies[SESSION_COOKIE] !== undefined ? "&expired=1" : ""
    return seeOther(`/sign-in?next=${encodeURIComponent(url.pathname + url.search)}${expired}`)
  })

  /** A page for a signed-in user; otherwise to sign-in, and back here after it (D25). */
  const page = <E, R>(
    render: (s: SignedIn) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
    adminOnly = false,
  ) =>
    Effect.gen(function* () {
      const session = yield* currentSession
      if (Option.isNone(session)) return yield* toSignIn
      if (adminOnly && session.value.role !== "admin") {
        return forbidden("Only an administrator can do this.", session.value.viewer)
      }
      return yield* Effect.provideService(render(session.value), AdminActor, session.value.actor)
    })

  /**
   * D28: a state change. Cross-site requests are refused before anything runs; then the session, its CSRF token
   * (constant time), the role; the handler answers with a 303.
   */
  const action = <E, R>(
    run: (s: SignedIn, form: Record<string, string>) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
    adminOnly = true,
  ) =>
    Effect.gen(function* () {
      const req = yield* request
      if (isCrossSite(req.headers, appOrigin)) return forbidden("This form was sent from another site.")
      const session = yield* currentSession
      if (Option.isNone(session)) {
        return html(
          <MessagePage
            title="Session expired"
            text="Your session has ended. Sign in again, then repeat the action."
            link={{ href: "/sign-in", label: "Sign in" }}
          />,
          401,
        )
      }
      const form = yield* formFields
      if (!tokensEqual(form.csrf, session.value.csrfToken)) {
        return forbidden("This form has expired. Reload the page and try again.", session.value.viewer)
      }
      if (adminOnly && session.value.role !== "admin") {
        return forbidden("Only an administrator can change settings.", session.value.viewer)
      }
      return yield* Effect.provideService(run(session.value, form), AdminActor, session.value.actor)
    })

  /** D28: what a POST tells the page it redirects to, read once by the same session (secrets sealed). */
  const flashTo = (s: SignedIn, path: string, flash: Flash) =>
    Effect.gen(function* () {
      const id = randomBytes(16).toString("base64url")
      const now = new Date()
      yield* users.pruneFlashes(now)
      yield* users.insertFlash({
        id,
        sessionHash: sha256(s.token),
        body: sealer.seal(new TextEncoder().encode(JSON.stringify(flash))),
        expiresAt: new Date(now.getTime() + FLASH_TTL_MS),
      })
      return seeOther(`${path}${path.includes("?") ? "&" : "?"}flash=${id}`)
    })

  const readFlash = (s: SignedIn) =>
    Effect.gen(function* () {
      const req = yield* request
      const id = new URL(req.url, "http://console").searchParams.get("flash")
      if (id === null || id.length > 64) return undefined
      const body = yield* users.takeFlash(id, sha256(s.token), new Date())
      if (Option.isNone(body)) return undefined
      const opened = sealer.open(body.value)
      return opened === undefined ? undefined : (JSON.parse(new TextDecoder().decode(opened)) as Flash)
    })

  const query = Effect.map(request, (req) => new URL(req.url, "http://console").searchParams)

  /**
   * A refusal of the admin services (errors.ts) becomes the page's error notice; the message never holds a secret.
   * An unknown id, or another organization's, gets the 404 page as a GET of it would (D30); a role that may not,
   * the 403 page.
   */
  const refused =
    (s: SignedIn, path: string) =>
    <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.catchIf(
        effect,
        (e): e is Extract<E, AdminError> => isAdminError(e),
        // The services' messages name the CLI's flags ("--name must be …"): here they name the form's fields.
        (error) => {
          const e: AdminError = error
          return e._tag === "NotFound"
            ? Effect.succeed(notFound(s.viewer))
            : e._tag === "Forbidden"
              ? Effect.succeed(forbidden(e.message, s.viewer))
              : flashTo(s, path, {
                  kind: "error",
                  text: e.message.replace(/--([a-z-]+)/g, (_, flag: string) => `the ${flag.replace("-", " ")}`),
                })
        },
      )

  const formCookie = () => randomBytes(24).toString("base64url")

  const router = HttpRouter.empty.pipe(
    // --- Sign-in and sign-out (D27) ---------------------------------------------------------------------------------
    HttpRouter.get(
      "/sign-in",
      Effect.gen(function* () {
        const params = yield* query
        const token = formCookie()
        const done = params.get("done") === "password"
        return yield* HttpServerResponse.setCookie(
          html(
            <SignInPage
              next={safeNext(params.get("next") ?? undefined)}
              csrf={token}
              error={params.get("expired") === "1" ? "Your session has ended. Sign in again." : undefined}
              notice={done ? "Your password is set. Sign in with it." : undefined}
            />,
          ),
          FORM_COOKIE,
          token,
          cookieOptions,
        )
      }),
    ),
    HttpRouter.post(
      "/sign-in",
      Effect.gen(function* () {
        const req = yield* request
        if (isCrossSite(req.headers, appOrigin)) return forbidden("This form was sent from another site.")
        const form = yield* formFields
        const next = safeNext(form.next)
        const again = (status: number, error: string, headers: Record<string, string> = {}) => {
          const token = formCookie()
          return HttpServerResponse.setCookie(
            html(<SignInPage next={next} csrf={token} error={error} email={form.email ?? ""} />, status, headers),
            FORM_COOKIE,
            token,
            cookieOptions,
          )
        }
        if (!tokensEqual(form.csrf, req.cookies[FORM_COOKIE])) {
          // No form cookie at all over plain HTTP on a non-local host: the browser dropped it (Secure), not expired.
          const facts = {
            tls: Option.isSome(config.consoleTls),
            peer: Option.getOrUndefined(req.remoteAddress),
            headers: req.headers,
            trustProxy: config.trustProxy,
          }
          if (req.cookies[FORM_COOKIE] === undefined && httpsRequired(facts)) {
            return html(<MessagePage title={HTTPS_REQUIRED_TITLE} text={HTTPS_REQUIRED_TEXT} />, 403)
          }
          return yield* again(403, "The sign-in form expired. Please try again.")
        }
        const result = yield* accounts.signIn(
          form.email ?? "",
          form.password ?? "",
          ipOf(req),
          req.cookies[SESSION_COOKIE],
          req.cookies[DEVICE_COOKIE],
        )
        if (result._tag === "Throttled") {
          return yield* again(
            429,
            `Too many failed sign-ins. Try again in ${Math.ceil(result.retryAfterSeconds / 60)} minute(s).`,
            { "retry-after": String(result.retryAfterSeconds) },
          )
        }
        if (result._tag === "Refused") return yield* again(401, "Wrong email or password.")
        return yield* seeOther(next).pipe(
          HttpServerResponse.setCookie(SESSION_COOKIE, result.token, { ...cookieOptions, maxAge: "7 days" }),
          Effect.flatMap(HttpServerResponse.setCookie(DEVICE_COOKIE, result.device, deviceCookieOptions)),
          Effect.flatMap(HttpServerResponse.expireCookie(FORM_COOKIE, { path: "/", secure: true })),
        )
      }),
    ),
    HttpRouter.post(
      "/sign-out",
      action(
        (s) =>
          Effect.zipRight(
            accounts.signOut({ token: s.token, userId: s.userId, orgId: s.orgId, ip: s.actor.ip }),
            HttpServerResponse.expireCookie(seeOther("/sign-in"), SESSION_COOKIE, { path: "/", secure: true }),
          ),
        false,
      ),
    ),
    HttpRouter.get(
      "/set-password/:token",
      Effect.gen(function* () {
        const { token } = yield* HttpRouter.params
        const state = token === undefined ? "unknown" : yield* accounts.linkState(token)
        if (state !== "valid") return linkExpired()
        const csrf = formCookie()
        return yield* HttpServerResponse.setCookie(
          html(<SetPasswordPage token={token as string} csrf={csrf} />),
          FORM_COOKIE,
          csrf,
          cookieOptions,
        )
      }),
    ),
    HttpRouter.post(
      "/set-password/:token",
      Effect.gen(function* () {
        const req = yield* request
        if (isCrossSite(req.headers, appOrigin)) return forbidden("This form was sent from another site.")
        const { token } = yield* HttpRouter.params
        const form = yield* formFields
        if (!tokensEqual(form.csrf, req.cookies[FORM_COOKIE]) || token === undefined) {
          return forbidden("This form has expired. Open the link again.")
        }
        return yield* accounts.setPassword(token, form.password ?? "", ipOf(req)).pipe(
          Effect.flatMap((done) =>
            HttpServerResponse.setCookie(
              seeOther("/sign-in?done=password"),
              DEVICE_COOKIE,
              done.device,
              deviceCookieOptions,
            ),
          ),
          Effect.catchTag("LinkExpired", () => Effect.succeed(linkExpired())),
          Effect.catchTag("Invalid", (e) => {
            const csrf = formCookie()
            return HttpServerResponse.setCookie(
              html(<SetPasswordPage token={token} csrf={csrf} error={e.message} />, 400),
              FORM_COOKIE,
              csrf,
              cookieOptions,
            )
          }),
        )
      }),
    ),
  )
  const pages = HttpRouter.empty.pipe(
    // --- Pages (D30) ------------------------------------------------------------------------------------------------
    HttpRouter.get(
      "/",
      page((s) =>
        Effect.gen(function* () {
          const now = new Date()
          const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - 13 * 86_400_000)
          const [open, activity, latest, sensors] = yield* Effect.all([
            reads.openBySeverity(s.orgId),
            reads.activity(s.orgId, start),
            reads.incidents({ orgId: s.orgId, status: undefined, severity: undefined, after: undefined, fetch: 8 }),
            sensorAdmin.list(s.orgId),
          ])
          const counts = new Map(activity.map((a) => [a.day, a.n]))
          const days = Array.from({ length: 14 }, (_, i) => {
            const day = new Date(start.getTime() + i * 86_400_000).toISOString().slice(0, 10)
            return { day, n: counts.get(day) ?? 0 }
          })
          return html(
            <OverviewPage
              viewer={s.viewer}
              open={Object.fromEntries(open.map((o) => [o.severity, o.n]))}
              days={days}
              latest={latest.map((r) => presentIncidentSummary(r, config.appUrl))}
              now={now}
              silentSensors={sensors.filter((x) => x.status === "silent").length}
            />,
          )
        }),
      ),
    ),
    HttpRouter.get(
      "/incidents",
      page((s) =>
        Effect.gen(function* () {
          const params = yield* query
          const status = params.get("status")
          const severity = params.get("severity")
          const filters = {
            status: status === "open" || status === "closed" ? (status as "open" | "closed") : undefined,
            severity:
              severity !== null && ["low", "medium", "high", "critical"].includes(severity) ? severity : undefined,
          }
          const after = decodeAfter(params.get("after") ?? undefined, "incident")
          const rows = yield* reads.incidents({ orgId: s.orgId, ...filters, after, fetch: PAGE_SIZE + 1 })
          const shown = rows.slice(0, PAGE_SIZE)
          const last = shown[shown.length - 1]
          return html(
            <IncidentsPage
              viewer={s.viewer}
              rows={shown.map((r) => presentIncidentSummary(r, config.appUrl))}
              filters={filters}
              next={rows.length > PAGE_SIZE && last ? encodeAfter(last.lastSeenAt, last.id) : undefined}
              first={after === undefined}
              now={new Date()}
            />,
          )
        }),
      ),
    ),
    HttpRouter.get(
      "/live/incidents",
      Effect.gen(function* () {
        // Polled by an open tab every 10 s: reads the session without touching it, so the tab idles out (D27).
        const session = yield* sessionOf({ touch: false })
        if (Option.isNone(session)) return HttpServerResponse.unsafeJson({ changed: false }, { status: 401 })
        const since = parseTimestamp((yield* query).get("since") ?? "")
        const changed = since === undefined ? false : yield* reads.changedSince(session.value.orgId, since)
        return HttpServerResponse.unsafeJson({ changed }, { headers: { "cache-control": "no-store" } })
      }),
    ),
    HttpRouter.get(
      "/incidents/:id",
      page((s) =>
        Effect.gen(function* () {
          const { id } = yield* HttpRouter.params
          if (id === undefined || !isId("incident", id)) return notFound(s.viewer)
          const row = yield* incidents.findById(s.orgId, id)
          if (Option.isNone(row)) return notFound(s.viewer)
          const members = yield* events.members(s.orgId, id, INCIDENT_EVENTS_SHOWN)
          return html(
            <IncidentPage
              viewer={s.viewer}
              incident={presentIncident(row.value, members, config.appUrl)}
              more={row.value.eventCount > members.length ? `/events?incidentId=${id}` : undefined}
              now={new Date()}
              flash={yield* readFlash(s)}
            />,
          )
        }),
      ),
    ),
    HttpRouter.post(
      "/incidents/:id/close",
      action(
        (s) =>
          Effect.gen(function* () {
            const { id } = yield* HttpRouter.params
            if (id === undefined || !isId("incident", id)) return notFound(s.viewer)
            if (Option.isNone(yield* incidents.findById(s.orgId, id))) return notFound(s.viewer)
            return yield* incidentAdmin
              .close(id)
              .pipe(
                Effect.zipRight(flashTo(s, `/incidents/${id}`, { kind: "ok", text: "Incident closed." })),
                refused(s, `/incidents/${id}`),
              )
          }),
        false,
      ),
    ),
    HttpRouter.get(
      "/events",
      page((s) =>
        Effect.gen(function* () {
          const params = yield* query
          const form = {
            type: params.get("type") ?? "",
            from: params.get("from") ?? "",
            to: params.get("to") ?? "",
            incidentId: params.get("incidentId") ?? "",
          }
          const errors: Array<string> = []
          const from = form.from === "" ? undefined : parseTimestamp(form.from)
          const to = form.to === "" ? undefined : parseTimestamp(form.to)
          if (form.from !== "" && from === undefined) errors.push("“From” must be a time such as 2026-11-20T00:00:00Z.")
          if (form.to !== "" && to === undefined) errors.push("“To” must be a time such as 2026-11-21T00:00:00Z.")
          if (from && to && from > to) errors.push("“From” must not be later than “To”.")
          const type = EVENT_TYPE_NAMES.includes(form.type) ? form.type : undefined
          const incidentId = isId("incident", form.incidentId) ? form.incidentId : undefined
          const after = decodeAfter(params.get("after") ?? undefined, "event")
          const rows =
            errors.length > 0
              ? []
              : yield* events.list({
                  orgId: s.orgId,
                  filters: { type, from, to, incidentId },
                  after,
                  fetch: PAGE_SIZE + 1,
                })
          const shown = rows.slice(0, PAGE_SIZE)
          const last = shown[shown.length - 1]
          let next: string | undefined
          if (rows.length > PAGE_SIZE && last) {
            const nextParams = new URLSearchParams(params)
            nextParams.delete("flash")
            nextParams.set("after", encodeAfter(last.time, last.id))
            next = `/events?${nextParams.toString()}`
          }
          return html(
            <EventsPage
              viewer={s.viewer}
              rows={shown.map(presentEvent)}
              types={EVENT_TYPE_NAMES}
              filters={{ ...form, incidentId: incidentId ?? "" }}
              error={errors.length > 0 ? errors.join(" ") : undefined}
              next={next}
              now={new Date()}
            />,
          )
        }),
      ),
    ),
  )
  const settings = HttpRouter.empty.pipe(
    // --- Settings → API and export ------------------------------------------------------------------------------------
    HttpRouter.get("/settings", Effect.succeed(seeOther("/settings/api"))),
    HttpRouter.get(
      "/settings/api",
      page((s) =>
        Effect.gen(function* () {
          const keys = yield* keyAdmin.list(s.orgId)
          return html(
            <ApiSettingsPage
              viewer={s.viewer}
              keys={keys}
              flash={yield* readFlash(s)}
              now={new Date()}
              apiUrl={apiUrl}
            />,
          )
        }),
      ),
    ),
    HttpRouter.post(
      "/settings/api/keys",
      action((s, form) =>
        Effect.gen(function* () {
          const scopes = (yield* formEntries).filter(([k]) => k === "scope").map(([, v]) => v)
          const expires = form.expires ? `${form.expires}T23:59:59.999Z` : undefined
          const created = yield* keyAdmin.create(s.orgId, { name: form.name, scopes: scopes.join(","), expires })
          return yield* flashTo(s, "/settings/api", {
            kind: "ok",
            text: `Key ${created.id} created.`,
            secret: { label: "The new API key.", value: created.key },
          })
        }).pipe(refused(s, "/settings/api")),
      ),
    ),
    HttpRouter.get(
      "/settings/api/keys/:id/revoke",
      page(
        (s) =>
          Effect.gen(function* () {
            const { id } = yield* HttpRouter.params
            const key = (yield* keyAdmin.list(s.orgId)).find((k) => k.id === id && k.revokedAt === null)
            if (key === undefined) return notFound(s.viewer)
            return html(<RevokeKeyPage viewer={s.viewer} key_={key} />)
          }),
        true,
      ),
    ),
    HttpRouter.post(
      "/settings/api/keys/:id/revoke",
      action((s) =>
        Effect.gen(function* () {
          const { id } = yield* HttpRouter.params
          const done = yield* keyAdmin.revoke(id ?? "")
          return yield* flashTo(s, "/settings/api", { kind: "ok", text: `Key ${done.id} revoked.` })
        }).pipe(refused(s, "/settings/api")),
      ),
    ),

    // --- Settings → Alerts ---------------------------------------------------------------------------------------------
    HttpRouter.get(
      "/settings/alerts",
      page((s) =>
        Effect.gen(function* () {
          const channels = yield* channelAdmin.list(s.orgId)
          return html(<AlertsPage viewer={s.viewer} channels={channels} flash={yield* readFlash(s)} now={new Date()} />)
        }),
      ),
    ),
    HttpRouter.post(
      "/settings/alerts/channels",
      action((s, form) =>
        Effect.gen(function* () {
          const created = yield* channelAdmin.create(s.orgId, {
            url: form.url,
            minSeverity: form.minSeverity,
            sensorHealth: form.sensorHealth === "on",
          })
          return yield* flashTo(s, "/settings/alerts", {
            kind: "ok",
            text: `Channel ${created.id} added.`,
            secret: { label: "Its signing secret.", value: created.secret },
          })
        }).pipe(refused(s, "/settings/alerts")),
      ),
    ),
    HttpRouter.get(
      "/settings/alerts/channels/:id",
      page((s) =>
        Effect.gen(function* () {
          const { id } = yield* HttpRouter.params
          const channel = (yield* channelAdmin.list(s.orgId)).find((c) => c.id === id)
          if (channel === undefined) return notFound(s.viewer)
          const deliveries = yield* channelAdmin.deliveries(channel.id, undefined)
          return html(
            <DeliveryLogPage
              viewer={s.viewer}
              channel={channel}
              deliveries={deliveries}
              flash={yield* readFlash(s)}
              now={new Date()}
            />,
          )
        }),
      ),
    ),
    HttpRouter.post(
      "/settings/alerts/channels/:id/:verb",
      action((s, form) =>
        Effect.gen(function* () {
          const { id = "", verb } = yield* HttpRouter.params
          const back = `/settings/alerts/channels/${encodeURIComponent(id)}`
          switch (verb) {
            case "test": {
              const result = yield* channelAdmin.test(id)
              const status = result.status === null ? "no HTTP status" : `HTTP ${result.status}`
              return yield* flashTo(s, back, {
                kind: result.ok ? "ok" : "error",
                text: `Send test: ${result.ok ? "delivered" : "failed"}, ${status} in ${result.durationMs} ms at ${new Date().toISOString()}${result.error ? ` (${result.error})` : ""}.`,
              })
            }
            case "enable":
            case "disable": {
              yield* channelAdmin.setEnabled(id, verb === "enable")
              return yield* flashTo(s, "/settings/alerts", { kind: "ok", text: `Channel ${verb}d.` })
            }
            case "sensor-health-on":
            case "sensor-health-off": {
              const on = verb === "sensor-health-on"
              yield* channelAdmin.setSensorHealth(id, on)
              return yield* flashTo(s, "/settings/alerts", {
                kind: "ok",
                text: on ? "Sensor-health alerts on for this channel." : "Sensor-health alerts off for this channel.",
              })
            }
            case "rotate": {
              const rotated = yield* channelAdmin.rotate(id, form.grace || undefined)
              return yield* flashTo(s, "/settings/alerts", {
                kind: "ok",
                text: rotated.previousSecretValidUntil
                  ? `Secret rotated; the old one also signs until ${rotated.previousSecretValidUntil}.`
                  : "Secret rotated; the old one no longer signs.",
                secret: { label: "The new signing secret.", value: rotated.secret },
              })
            }
            default:
              return notFound(s.viewer)
          }
        }).pipe(refused(s, "/settings/alerts")),
      ),
    ),
    HttpRouter.post(
      "/settings/alerts/deliveries/:id/redeliver",
      action((s) =>
        Effect.gen(function* () {
          const { id = "" } = yield* HttpRouter.params
          yield* channelAdmin.redeliver(id)
          return yield* flashTo(s, "/settings/alerts", { kind: "ok", text: `Delivery ${id} queued again.` })
        }).pipe(refused(s, "/settings/alerts")),
      ),
    ),

    // --- Settings → Sensors (D43): every user reads; admins change, through the audited SensorAdmin ---------------
    HttpRouter.get(
      "/settings/sensors",
      page((s) =>
        Effect.gen(function* () {
          const sensors = yield* sensorAdmin.list(s.orgId)
          const flash = yield* readFlash(s)
          return html(
            <SensorsPage
              viewer={s.viewer}
              sensors={sensors}
              flash={flash}
              now={new Date()}
              ingestUrl={config.ingestUrl}
              appUrl={config.appUrl}
            />,
          )
        }),
      ),
    ),
    HttpRouter.post(
      "/settings/sensors",
      action((s, form) =>
        Effect.gen(function* () {
          const created = yield* sensorAdmin.create(s.orgId, {
            name: form.name,
            profile: form.profile,
            heartbeatInterval: form.heartbeatInterval,
          })
          return yield* flashTo(s, "/settings/sensors", {
            kind: "ok",
            text: `Sensor ${created.id} added.`,
            secret: { label: "Its ingest token.", value: created.token },
          })
        }).pipe(refused(s, "/settings/sensors")),
      ),
    ),
    HttpRouter.get(
      "/settings/sensors/:id",
      page((s) =>
        Effect.gen(function* () {
          const { id } = yield* HttpRouter.params
          const sensor = (yield* sensorAdmin.list(s.orgId)).find((x) => x.id === id)
          if (sensor === undefined) return notFound(s.viewer)
          return html(<SensorPage viewer={s.viewer} sensor={sensor} flash={yield* readFlash(s)} now={new Date()} />)
        }),
      ),
    ),
    HttpRouter.post(
      "/settings/sensors/:id/:verb",
      action((s, form) =>
        Effect.gen(function* () {
          const { id = "", verb } = yield* HttpRouter.params
          const back = `/settings/sensors/${encodeURIComponent(id)}`
          switch (verb) {
            case "rename": {
              const done = yield* sensorAdmin.rename(id, form.name)
              return yield* flashTo(s, back, { kind: "ok", text: `Renamed to ${done.name}.` })
            }
            case "heartbeat": {
              const done = yield* sensorAdmin.setHeartbeat(id, form.heartbeatInterval)
              const text =
                done.heartbeatIntervalSeconds === null
                  ? "No heartbeat expected."
                  : `A heartbeat every ${done.heartbeatIntervalSeconds} s is expected.`
              return yield* flashTo(s, back, { kind: "ok", text })
            }
            case "rotate": {
              const force = form.force === "yes"
              const rotated = yield* sensorAdmin.rotate(id, form.grace || undefined, force)
              return yield* flashTo(s, "/settings/sensors", {
                kind: "ok",
                text: rotated.previousTokenValidUntil
                  ? `Token rotated; the old one also works until ${rotated.previousTokenValidUntil}.`
                  : "Token rotated; the old one no longer works.",
                secret: { label: "The new ingest token.", value: rotated.token },
              })
            }
            case "revoke": {
              if (form.confirm !== "yes") {
                return yield* flashTo(s, back, { kind: "error", text: "Tick the box to confirm the revocation." })
              }
              yield* sensorAdmin.revoke(id)
              return yield* flashTo(s, "/settings/sensors", { kind: "ok", text: `Sensor ${id} revoked.` })
            }
            default:
              return notFound(s.viewer)
          }
        }).pipe(refused(s, "/settings/sensors")),
      ),
    ),

    // --- Settings → Users and Audit log ------------------------------------------------------------------------------------
    HttpRouter.get(
      "/settings/users",
      page((s) =>
        Effect.gen(function* () {
          const list = yield* userAdmin.list(s.orgId)
          return html(<UsersPage viewer={s.viewer} users={list} flash={yield* readFlash(s)} now={new Date()} />)
        }),
      ),
    ),
    HttpRouter.post(
      "/settings/users",
      action((s, form) =>
        Effect.gen(function* () {
          const created = yield* userAdmin.create({ orgId: s.orgId, email: form.email ?? "", role: form.role ?? "" })
          return yield* flashTo(s, "/settings/users", {
            kind: "ok",
            text: `User ${created.email} created. Send them this link (valid 24 h, once) to set a password.`,
            secret: { label: "Set-password link.", value: created.link },
          })
        }).pipe(refused(s, "/settings/users")),
      ),
    ),
    HttpRouter.post(
      "/settings/users/:id/:verb",
      action((s) =>
        Effect.gen(function* () {
          const { id = "", verb } = yield* HttpRouter.params
          if (verb === "disable") {
            yield* userAdmin.disable(id)
            return yield* flashTo(s, "/settings/users", { kind: "ok", text: "User disabled; their sessions ended." })
          }
          if (verb === "reset") {
            const reset = yield* userAdmin.reset(id)
            return yield* flashTo(s, "/settings/users", {
              kind: "ok",
              text: `New link for ${reset.email}; their sessions ended.`,
              secret: { label: "Set-password link.", value: reset.link },
            })
          }
          return notFound(s.viewer)
        }).pipe(refused(s, "/settings/users")),
      ),
    ),
    HttpRouter.get(
      "/settings/audit",
      page(
        (s) =>
          Effect.gen(function* () {
            const before = (yield* query).get("before") ?? undefined
            const rows = yield* audit.list(s.orgId, PAGE_SIZE + 1, before)
            const shown = rows.slice(0, PAGE_SIZE)
            const actors = Object.fromEntries((yield* userAdmin.list(s.orgId)).map((u) => [u.id, u.email]))
            const last = shown[shown.length - 1]
            return html(
              <AuditPage
                viewer={s.viewer}
                rows={shown}
                actors={actors}
                next={rows.length > PAGE_SIZE && last ? `/settings/audit?before=${last.id}` : undefined}
                now={new Date()}
              />,
            )
          }),
        true,
      ),
    ),
  )

  let withAssets = HttpRouter.concatAll(router, pages, settings)
  for (const asset of ASSETS) {
    withAssets = HttpRouter.get(
      withAssets,
      asset.path as `/${string}`,
      Effect.succeed(
        HttpServerResponse.uint8Array(asset.body, {
          contentType: asset.contentType,
          headers: { "cache-control": "public, max-age=31536000, immutable" },
        }),
      ),
    )
  }

  // A plain Effect, not a router value: the Bun server serves a router value through Bun's own routes, without the
  // middleware and this handler; as an Effect every request goes through the security headers and the 404 page.
  // Every input is checked at the edge, before any route (and so any database work) runs: the body's declared size,
  // the URL, the decoded path and every query value. Form bodies are checked as they are read (http.ts).
  const checked = Effect.flatMap(request, (req) => {
    const verdict = checkRequest(req)
    if (verdict === "too-large") return Effect.succeed(tooLarge())
    if (verdict === "bad") return Effect.succeed(badRequest())
    return withAssets
  })
  const app: Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest> =
    Effect.catchAllCause(checked, (cause) =>
      Effect.gen(function* () {
        const req = yield* request
        const failure = Cause.failureOption(cause)
        const tag = Option.isSome(failure) ? (failure.value as { _tag?: string })._tag : undefined
        if (tag === "RouteNotFound") {
          const session = yield* Effect.orElseSucceed(currentSession, () => Option.none<SignedIn>())
          return notFound(Option.getOrUndefined(session)?.viewer)
        }
        if (tag === "BodyTooLarge") return tooLarge()
        if (tag === "BadInput") return badRequest()
        // A client that went away (an aborted sign-in, a closed tab) is not an error of ours.
        if (Cause.isInterruptedOnly(cause)) {
          yield* Effect.logDebug("console request interrupted").pipe(Effect.annotateLogs({ path: redactPath(req.url) }))
          return HttpServerResponse.empty({ status: 499 })
        }
        yield* Effect.logError("console request failed", cause).pipe(Effect.annotateLogs({ path: redactPath(req.url) }))
        return html(
          <MessagePage title="Something went wrong" text="The request could not be completed. It has been logged." />,
          500,
        )
      }),
    )
  return app
})

/** D29 on every response, static files and errors included. */
const securityHeaders = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.map(app, (response) => HttpServerResponse.setHeaders(response, SECURITY_HEADERS))

const logAddress = Effect.gen(function* () {
  const server = yield* HttpServer.HttpServer
  if (server.address._tag === "TcpAddress") {
    yield* Effect.logInfo("console listening").pipe(
      Effect.annotateLogs({ listener: "console", port: server.address.port }),
    )
  }
})

/** The console listener on CONSOLE_PORT (D25): never the API's port; it accepts no API key. */
const ConsoleListenerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    Layer.unwrapEffect(Effect.map(makeRouter, (router) => HttpServer.serve(securityHeaders(router)))).pipe(
      Layer.provide(Layer.effectDiscard(logAddress)),
      Layer.provide(
        BunHttpServer.layer({
          port: config.consolePort,
          hostname: config.host,
          // Bun's own cut-off, far below its 128 MiB default; the console's limit (64 KiB) is checked before it.
          maxRequestBodySize: SERVER_MAX_BODY_BYTES,
          // D25: HTTPS itself with CONSOLE_TLS_CERT_FILE and CONSOLE_TLS_KEY_FILE, or plain HTTP behind a proxy.
          ...Option.match(config.consoleTls, { onNone: () => ({}), onSome: (tls) => ({ tls }) }),
        }),
      ),
    ),
  ),
)

/**
 * The console face: its listener, with the console's own read statements. It needs the admin services
 * (admin/layer.ts), the shared repositories and a database pool, all given by main.ts.
 */
export const ConsoleLive = ConsoleListenerLive.pipe(Layer.provide(ConsoleReads.Default))
