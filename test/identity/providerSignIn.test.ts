import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { admin } from "../support/cli.ts"
import { cookieOf, setPassword } from "../support/console.ts"
import { olderWritersEnded, type TestDatabase } from "../support/db.ts"
import { get as apiGet, createKey, createOrg, createUser } from "../support/fixtures.ts"
import type { TestOidcProvider } from "../support/oidcProvider.ts"
import type { RunningServer } from "../support/server.ts"
import { type SsoConsole, startSsoConsole } from "../support/singleSignOn.ts"

/**
 * Sign-in through an organization's OpenID Connect provider, over real HTTP against one server and a real provider
 * (oidc-provider on loopback behind TLS, trusted through WEBHOOK_CA_FILE, its loopback address allowed through
 * WEBHOOK_ALLOW_PRIVATE as for channels): an administrator sets it up (checked against the provider first), a user is
 * created at the first sign-in with the role its claim gives, a viewer reads and changes nothing, and every forged,
 * replayed or foreign answer is refused with a page that says why, and audited.
 */

const PASSWORD = "a long enough passphrase 9"
const FORM_CSRF = /name="csrf" value="([^"]+)"/
const RUN = Date.now().toString(36)
const DOMAIN = `sso-${RUN}.example`

let server: RunningServer
let db: TestDatabase
let op: TestOidcProvider
let consoleUrl: string
let orgId: string
let adminCookie: string
let adminCsrf: string
let sso: SsoConsole | undefined

const query = <A extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text, params as Array<unknown>)))

const postForm = (path: string, fields: Record<string, string>, cookie: string) =>
  fetch(`${consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
    body: new URLSearchParams(fields),
  })
const getPage = (path: string, cookie = "") =>
  fetch(`${consoleUrl}${path}`, { headers: { cookie }, redirect: "manual" })

/** A password sign-in: the session cookie. */
const passwordSignIn = async (email: string, password = PASSWORD) => {
  const form = await fetch(`${consoleUrl}/sign-in`)
  const csrf = FORM_CSRF.exec(await form.text())?.[1] ?? ""
  return postForm("/sign-in", { csrf, email, password, next: "/" }, cookieOf(form, "__Host-form") ?? "")
}

/** The single sign-on form with `email`: the redirect to the provider and the state cookie. */
const startSso = async (email: string) => {
  const form = await fetch(`${consoleUrl}/sign-in`)
  const csrf = FORM_CSRF.exec(await form.text())?.[1] ?? ""
  const started = await postForm(
    "/sign-in/sso",
    { csrf, email, next: "/incidents" },
    cookieOf(form, "__Host-form") ?? "",
  )
  // A page that moves on to the provider by itself (a form may not redirect to another site under the console's CSP).
  const page = started.status === 200 ? await started.clone().text() : ""
  const refresh = /<meta http-equiv="refresh" content="0;url=([^"]+)"/.exec(page)?.[1]?.replaceAll("&amp;", "&")
  const link = /<a href="([^"]+)">Continue<\/a>/.exec(page)?.[1]?.replaceAll("&amp;", "&")
  expect(refresh).toBe(link)
  return { started, location: link ?? "", state: cookieOf(started, "__Host-sso-state") ?? "" }
}

/** The whole round: the form, the provider's login as `login`, and the callback in the same browser. */
const signInThroughProvider = async (email: string, login: string) => {
  const { location, state, started } = await startSso(email)
  if (!location.startsWith(op.issuer)) throw new Error(`no redirect to the provider: ${started.status} ${location}`)
  const back = await op.loginThrough(location, login)
  const callback = new URL(back)
  const answer = await getPage(`${callback.pathname}${callback.search}`, state)
  return { answer, callback, state }
}

const refusalOf = async (answer: Response) => {
  expect(answer.status).toBe(403)
  expect(cookieOf(answer, "__Host-session")).toBeUndefined()
  const text = await answer.text()
  expect(text).toContain("Sign-in refused")
  return text.replaceAll("&#39;", "'").replaceAll("&quot;", '"')
}

const userByEmail = async (email: string) =>
  (
    await query<{ id: string; role: string; org_id: string }>(
      "select id, role, org_id from console_users where email = $1",
      [email],
    )
  )[0]

const setProvider = (fields: Record<string, string>) =>
  postForm(
    "/settings/sign-in",
    {
      csrf: adminCsrf,
      issuer: op.issuer,
      clientId: op.clientId,
      clientSecret: op.clientSecret,
      domains: DOMAIN,
      roleClaim: "roles",
      defaultRole: "none",
      passwordSignIn: "on",
      ...fields,
    },
    adminCookie,
  )

beforeAll(async () => {
  sso = await startSsoConsole()
  ;({ op, server, db, consoleUrl } = sso)
  orgId = (await createOrg(db, `Single sign-on ${RUN}`)).id
  const made = await createUser(db, orgId, `admin@${DOMAIN}`, "admin")
  await setPassword(consoleUrl, made.link, PASSWORD)
  adminCookie = cookieOf(await passwordSignIn(`admin@${DOMAIN}`), "__Host-session") ?? ""
  adminCsrf = FORM_CSRF.exec(await (await getPage("/settings/sign-in", adminCookie)).text())?.[1] ?? ""
}, 120_000)

afterAll(async () => {
  await sso?.stop()
})

describe("an administrator sets the provider up (Settings → Sign-in)", () => {
  test("an issuer that is not https, or whose discovery fails, is refused and nothing is stored", async () => {
    const plain = await setProvider({ issuer: op.issuer.replace("https:", "http:") })
    expect(plain.status).toBe(400)
    expect(await plain.text()).toContain("http:// is not allowed")
    const wrong = await setProvider({ issuer: `${op.issuer}/not-the-issuer` })
    expect(wrong.status).toBe(400)
    expect(await wrong.text()).toContain("The provider cannot be used: discovery failed")
    expect(await query("select org_id from sign_in_providers where org_id = $1", [orgId])).toEqual([])
  })

  test("the real provider is checked and stored, its secret sealed and in no page or audit row", async () => {
    const saved = await setProvider({})
    expect(saved.status).toBe(303)
    const page = await (await getPage("/settings/sign-in", adminCookie)).text()
    expect(page).toContain(`${consoleUrl}/sign-in/sso/callback`)
    expect(page).toContain(op.issuer)
    expect(page).not.toContain(op.clientSecret)
    const [row] = await query<{ clientSecretSealed: string }>(
      "select client_secret_sealed from sign_in_providers where org_id = $1",
      [orgId],
    )
    expect(row?.clientSecretSealed).toBeDefined()
    expect(row?.clientSecretSealed).not.toContain(op.clientSecret)
    const audit = await query<{ action: string; detail: string }>(
      "select action, detail from audit_log where org_id = $1 and action like 'org.sign_in%'",
      [orgId],
    )
    expect(audit.map((a) => a.action)).toEqual(["org.sign_in_provider_set"])
    expect(JSON.stringify(audit)).not.toContain(op.clientSecret)
    // An analyst or a viewer does not reach the page.
    expect((await getPage("/settings/sign-in")).status).toBe(303)
  })

  test("an email domain signs in to one organization: another organization cannot claim it", async () => {
    const other = (await createOrg(db, `Other ${RUN}`)).id
    const refused = await admin(
      server.env,
      [
        "sign-in",
        "set",
        "--org",
        other,
        "--issuer",
        op.issuer,
        "--client-id",
        op.clientId,
        "--client-secret",
        "-",
        "--domains",
        DOMAIN,
        "--default-role",
        "viewer",
      ],
      `${op.clientSecret}\n`,
    )
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain(`${DOMAIN} is admitted by another organization's provider already`)
    expect(refused.stdout + refused.stderr).not.toContain(op.clientSecret)
  })
})

describe("signing in through the provider", () => {
  test("a first sign-in creates the user with the role its claim gives: a viewer reads and changes nothing", async () => {
    op.setAccount("vera", { sub: `vera-${RUN}`, email: `vera@${DOMAIN}`, email_verified: true, roles: ["viewer"] })
    const { answer } = await signInThroughProvider(`vera@${DOMAIN}`, "vera")
    expect(answer.status).toBe(303)
    expect(answer.headers.get("location")).toBe("/incidents")
    const session = cookieOf(answer, "__Host-session") ?? ""
    expect(session).not.toBe("")
    const user = await userByEmail(`vera@${DOMAIN}`)
    expect(user).toMatchObject({ role: "viewer", orgId })
    expect((await getPage("/incidents", session)).status).toBe(200)
    const settings = await getPage("/settings/sign-in", session)
    expect(settings.status).toBe(403)
    const page = await (await getPage("/incidents", session)).text()
    const csrf = FORM_CSRF.exec(page)?.[1] ?? ""
    expect((await postForm("/settings/sign-in/remove", { csrf }, session)).status).toBe(403)
    const audit = await query<{ action: string; detail: string | null }>(
      "select action, detail from audit_log where target = $1 order by at",
      [user?.id],
    )
    expect(audit.map((a) => a.action)).toEqual(["user.create", "signin"])
    expect(audit[1]?.detail).toBe(`through ${op.issuer}`)
  })

  test("the provider's claim decides the role at every sign-in; the highest named counts", async () => {
    op.setAccount("ana", { sub: `ana-${RUN}`, email: `ana@${DOMAIN}`, roles: ["viewer", "analyst"] })
    expect((await signInThroughProvider(`ana@${DOMAIN}`, "ana")).answer.status).toBe(303)
    expect((await userByEmail(`ana@${DOMAIN}`))?.role).toBe("analyst")
    op.setAccount("ana", { sub: `ana-${RUN}`, email: `ana@${DOMAIN}`, roles: "admin" })
    expect((await signInThroughProvider(`ana@${DOMAIN}`, "ana")).answer.status).toBe(303)
    expect((await userByEmail(`ana@${DOMAIN}`))?.role).toBe("admin")
  })

  test("a default role makes new users only: an administrator the claim names nothing for stays one", async () => {
    const changed = await admin(server.env, ["sign-in", "set", "--org", orgId, "--default-role", "viewer"])
    expect(changed.code).toBe(0)
    expect(changed.stdout).not.toContain(op.clientSecret)
    const shown = await admin(server.env, ["sign-in", "show", "--org", orgId])
    expect(shown.stdout).toContain(`issuer: ${op.issuer}`)
    expect(shown.stdout).toContain("default role: viewer")
    expect(shown.stdout).toContain("client secret: (sealed)")
    expect(shown.stdout).not.toContain(op.clientSecret)
    try {
      op.setAccount("nils", { sub: `nils-${RUN}`, email: `nils@${DOMAIN}` })
      expect((await signInThroughProvider(`nils@${DOMAIN}`, "nils")).answer.status).toBe(303)
      expect((await userByEmail(`nils@${DOMAIN}`))?.role).toBe("viewer")
      // The administrator made with a password signs in through the provider: found by email, linked, still admin.
      op.setAccount("boss", { sub: `boss-${RUN}`, email: `admin@${DOMAIN}` })
      const { answer } = await signInThroughProvider(`admin@${DOMAIN}`, "boss")
      expect(answer.status).toBe(303)
      expect((await userByEmail(`admin@${DOMAIN}`))?.role).toBe("admin")
      const linked = await query<{ subject: string }>(
        "select subject from console_user_identities where user_id = (select id from console_users where email = $1)",
        [`admin@${DOMAIN}`],
      )
      expect(linked.map((l) => l.subject)).toEqual([`boss-${RUN}`])
    } finally {
      expect((await admin(server.env, ["sign-in", "set", "--org", orgId, "--default-role", "none"])).code).toBe(0)
    }
  })

  test("a claim that gives no role, with no default role, is refused", async () => {
    op.setAccount("nora", { sub: `nora-${RUN}`, email: `nora@${DOMAIN}`, roles: ["guest"] })
    const text = await refusalOf((await signInThroughProvider(`nora@${DOMAIN}`, "nora")).answer)
    expect(text).toContain("no console role")
    expect(await userByEmail(`nora@${DOMAIN}`)).toBeUndefined()
  })

  test("a replayed answer (the same state and code again) is refused", async () => {
    op.setAccount("rita", { sub: `rita-${RUN}`, email: `rita@${DOMAIN}`, roles: ["viewer"] })
    const { answer, callback, state } = await signInThroughProvider(`rita@${DOMAIN}`, "rita")
    expect(answer.status).toBe(303)
    const again = await getPage(`${callback.pathname}${callback.search}`, state)
    expect(await refusalOf(again)).toContain("already used")
  })

  test("an answer brought by another browser (no state cookie, or another sign-in's) is refused", async () => {
    op.setAccount("otto", { sub: `otto-${RUN}`, email: `otto@${DOMAIN}`, roles: ["viewer"] })
    const { location } = await startSso(`otto@${DOMAIN}`)
    const callback = new URL(await op.loginThrough(location, "otto"))
    const bare = await getPage(`${callback.pathname}${callback.search}`)
    expect(await refusalOf(bare)).toContain("not started in this browser")
    const other = await startSso(`otto@${DOMAIN}`)
    const foreign = await getPage(`${callback.pathname}${callback.search}`, other.state)
    expect(await refusalOf(foreign)).toContain("not started in this browser")
  })

  for (const [mode, says] of [
    ["wrong-issuer", '"iss"'],
    ["wrong-audience", '"aud"'],
    ["other-key", "signature"],
    ["expired", '"exp"'],
  ] as const) {
    test(`an ID token forged by the answer (${mode}) is refused`, async () => {
      op.setAccount("fay", { sub: `fay-${RUN}`, email: `fay@${DOMAIN}`, roles: ["admin"] })
      op.tamper(mode)
      try {
        const text = await refusalOf((await signInThroughProvider(`fay@${DOMAIN}`, "fay")).answer)
        expect(text).toContain(says)
      } finally {
        op.tamper("none")
      }
      expect(await userByEmail(`fay@${DOMAIN}`)).toBeUndefined()
      const failed = await query<{ detail: string }>(
        "select detail from audit_log where action = 'signin.failed' and org_id = $1 order by at desc limit 1",
        [orgId],
      )
      expect(failed[0]?.detail).toContain("through the organization's provider")
    })
  }

  test("an email outside the organization's domains, or one the provider has not verified, is refused", async () => {
    op.setAccount("eve", { sub: `eve-${RUN}`, email: "eve@elsewhere.example", email_verified: true, roles: ["admin"] })
    expect(await refusalOf((await signInThroughProvider(`eve@${DOMAIN}`, "eve")).answer)).toContain(
      "not in one of the organization's email domains",
    )
    op.setAccount("ulla", { sub: `ulla-${RUN}`, email: `ulla@${DOMAIN}`, email_verified: false, roles: ["admin"] })
    expect(await refusalOf((await signInThroughProvider(`ulla@${DOMAIN}`, "ulla")).answer)).toContain("not verified")
    expect(await userByEmail("eve@elsewhere.example")).toBeUndefined()
    expect(await userByEmail(`ulla@${DOMAIN}`)).toBeUndefined()
  })

  test("a disabled user cannot come back through the provider", async () => {
    op.setAccount("dora", { sub: `dora-${RUN}`, email: `dora@${DOMAIN}`, roles: ["analyst"] })
    expect((await signInThroughProvider(`dora@${DOMAIN}`, "dora")).answer.status).toBe(303)
    const user = await userByEmail(`dora@${DOMAIN}`)
    const disabled = await admin(server.env, ["user", "disable", user?.id ?? ""])
    expect(disabled.code).toBe(0)
    expect(await refusalOf((await signInThroughProvider(`dora@${DOMAIN}`, "dora")).answer)).toContain("disabled")
  })

  test("an email domain without a provider is told so on the sign-in page", async () => {
    const { started } = await startSso("someone@no-provider.example")
    expect(started.status).toBe(404)
    expect(await started.text()).toContain("No organization signs in with single sign-on for that email domain")
  })

  test("with password sign-in off, a right password is told to use the provider; the CLI turns it back on", async () => {
    const made = await createUser(db, orgId, `pat@${DOMAIN}`, "analyst")
    await setPassword(consoleUrl, made.link, PASSWORD)
    const off = await admin(server.env, ["sign-in", "passwords", "--org", orgId, "off"])
    expect(off.code).toBe(0)
    const refused = await passwordSignIn(`pat@${DOMAIN}`)
    expect(refused.status).toBe(403)
    expect(await refused.text()).toContain("signs in through its own provider")
    const wrong = await passwordSignIn(`pat@${DOMAIN}`, "not the password at all")
    expect(wrong.status).toBe(401)
    const on = await admin(server.env, ["sign-in", "passwords", "--org", orgId, "on"])
    expect(on.code).toBe(0)
    expect((await passwordSignIn(`pat@${DOMAIN}`)).status).toBe(303)
  })

  test("a SIEM following the audit feed sees each sign-in and refusal once, and no secret", async () => {
    const { key } = await createKey(db, orgId, "audit:read")
    // The feed holds back rows while an older transaction (another test file's) may still commit below them.
    await olderWritersEnded(db)
    const seen: Array<{ action: string; detail: string | null }> = []
    let after: string | undefined
    for (;;) {
      const page = await apiGet(
        server.url,
        `/v1/audit/changes?limit=100${after === undefined ? "" : `&after=${encodeURIComponent(after)}`}`,
        key,
      )
      expect(page.status).toBe(200)
      seen.push(...page.body.data)
      after = page.body.nextToken
      if (!page.body.hasMore) break
    }
    const stored = await query<{ id: string }>("select id from audit_log where org_id = $1", [orgId])
    expect(seen.length).toBe(stored.length)
    expect(new Set(seen.map((s) => (s as unknown as { id: string }).id)).size).toBe(seen.length)
    const actions = seen.map((s) => s.action)
    expect(actions).toContain("org.sign_in_provider_set")
    expect(actions.filter((a) => a === "signin.failed").length).toBeGreaterThanOrEqual(8)
    expect(JSON.stringify(seen)).not.toContain(op.clientSecret)
  })

  test("a flood of starts is bounded: past 2,000 sign-ins in flight, starts are refused until some expire", async () => {
    await query(
      `insert into sign_in_provider_requests (state_hash, org_id, verifier_sealed, nonce, created_at, expires_at)
       select sha256(('flood-' || g)::bytea), $1, 'x', 'n', now(), now() + interval '10 minutes'
       from generate_series(1, 2000) g`,
      [orgId],
    )
    try {
      const { started } = await startSso(`vera@${DOMAIN}`)
      expect(started.status).toBe(502)
      expect(await started.text()).toContain("too many sign-ins are in progress")
    } finally {
      await query("delete from sign_in_provider_requests where nonce = 'n' and org_id = $1", [orgId])
    }
    expect((await startSso(`vera@${DOMAIN}`)).started.status).toBe(200)
  })

  test("removing the provider ends single sign-on; its users stay, and the sign-in page says there is none", async () => {
    const removed = await admin(server.env, ["sign-in", "remove", "--org", orgId])
    expect(removed.code).toBe(0)
    expect(removed.stdout).toContain("sign-in provider removed")
    expect(await userByEmail(`vera@${DOMAIN}`)).toMatchObject({ role: "viewer" })
    const { started } = await startSso(`vera@${DOMAIN}`)
    expect(started.status).toBe(404)
    expect((await admin(server.env, ["sign-in", "show", "--org", orgId])).stdout).toContain("has no sign-in provider")
  })
})
