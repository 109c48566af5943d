import { HttpRouter } from "@effect/platform"
import { Effect } from "effect"
import { ApiKeyAdmin } from "../../admin/ApiKeyAdmin.ts"
import { OrgAdmin } from "../../admin/OrgAdmin.ts"
import { UserAdmin } from "../../admin/UserAdmin.ts"
import { AppConfig } from "../../platform/config.ts"
import { AuditRepo } from "../../repos/AuditRepo.ts"
import { formEntries, html, seeOther } from "../http.ts"
import type { Kit } from "../kit.ts"
import { ApiSettingsPage, AuditPage, RetentionPage, RevokeKeyPage, UsersPage } from "../pages/settings.tsx"
import { notFound } from "../responses.tsx"
import { query } from "../session.ts"

const PAGE_SIZE = 50

/** Settings → API and export (keys), Users, Retention (D49) and the Audit log: every change through the admin services. */
export const settingsRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const keyAdmin = yield* ApiKeyAdmin
    const userAdmin = yield* UserAdmin
    const orgAdmin = yield* OrgAdmin
    const audit = yield* AuditRepo
    const { page, action, flashTo, readFlash, refused } = kit
    const apiUrl = config.baseUrl ?? `http://localhost:${config.port}`
    return HttpRouter.empty.pipe(
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
      // --- Settings → Retention (D49) ---------------------------------------------------------------------------------------
      HttpRouter.get(
        "/settings/retention",
        page((s) =>
          Effect.gen(function* () {
            const org = yield* orgAdmin.require(s.orgId)
            return html(
              <RetentionPage
                viewer={s.viewer}
                flash={yield* readFlash(s)}
                days={org.retentionDays}
                defaultDays={config.retentionDays}
                feedDays={config.feedRetentionDays}
              />,
            )
          }),
        ),
      ),
      HttpRouter.post(
        "/settings/retention",
        action((s, form) =>
          Effect.gen(function* () {
            const done = yield* orgAdmin.setRetention(s.orgId, form.days)
            return yield* flashTo(s, "/settings/retention", {
              kind: "ok",
              text:
                done.retentionDays === null
                  ? `Events are kept for the default ${config.retentionDays} days.`
                  : `Events are kept for ${done.retentionDays} days.`,
            })
          }).pipe(refused(s, "/settings/retention")),
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
  })
