import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { admin, adminJson } from "../support/cli.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * Names that must tell things apart: a second organization of the same name (ignoring case) is refused unless the
 * operator says so; within an organization, a second sensor in service of the same name is refused, at the CLI and
 * in the console alike. Real CLI processes and a real console against one server's database.
 */

let server: RunningServer

beforeAll(async () => {
  server = await startServer()
})

afterAll(() => shutdown(server))

const unique = (prefix: string) => `${prefix} ${crypto.randomUUID().slice(0, 8)}`

describe("organization names", () => {
  test("a duplicate is refused in one line naming the other organization; --allow-duplicate-name makes it explicit", async () => {
    const name = unique("Dup Co")
    const first = await adminJson(server.env, ["org", "create", "--name", name])
    const again = await admin(server.env, ["org", "create", "--name", `  ${name.toUpperCase()} `])
    expect(again.code).toBe(1)
    expect(again.stderr.split("\n")).toEqual([
      `error: an organization named "${name}" already exists (${first.id}); use --allow-duplicate-name to create another`,
    ])
    const second = await adminJson(server.env, ["org", "create", "--name", name, "--allow-duplicate-name"])
    expect(second.id).not.toBe(first.id)
    const orgs = (await adminJson(server.env, ["org", "list"])) as Array<{ id: string; name: string }>
    expect(orgs.filter((o) => o.name === name).map((o) => o.id)).toEqual([first.id, second.id].sort())
  })
})

describe("sensor names within an organization", () => {
  test("CLI: create and rename refuse a name in service; another organization and a revoked sensor's name are free", async () => {
    const a = await adminJson(server.env, ["org", "create", "--name", unique("Sensors A")])
    const b = await adminJson(server.env, ["org", "create", "--name", unique("Sensors B")])
    const web = await adminJson(server.env, ["sensor", "create", "--org", a.id, "--name", "web-01"])
    const refusal = `error: a sensor named "web-01" already exists in this organization (${web.id}); choose another name`

    const twice = await admin(server.env, ["sensor", "create", "--org", a.id, "--name", "WEB-01"])
    expect({ code: twice.code, stderr: twice.stderr }).toEqual({ code: 1, stderr: refusal })
    // Nothing was created by the refused command.
    expect((await adminJson(server.env, ["sensor", "list", "--org", a.id])).map((s: { id: string }) => s.id)).toEqual([
      web.id,
    ])

    expect((await admin(server.env, ["sensor", "create", "--org", b.id, "--name", "web-01"])).code).toBe(0)

    const db = await adminJson(server.env, ["sensor", "create", "--org", a.id, "--name", "db-01"])
    const rename = await admin(server.env, ["sensor", "rename", db.id, "--name", "web-01"])
    expect({ code: rename.code, stderr: rename.stderr }).toEqual({ code: 1, stderr: refusal })
    // Renaming a sensor to its own name (another case) is not a conflict with itself.
    expect((await admin(server.env, ["sensor", "rename", web.id, "--name", "Web-01"])).code).toBe(0)

    expect((await admin(server.env, ["sensor", "revoke", web.id])).code).toBe(0)
    expect((await admin(server.env, ["sensor", "create", "--org", a.id, "--name", "web-01"])).code).toBe(0)
  })

  test("console: Settings → Sensors refuses the duplicate with an error notice naming the sensor that has the name", async () => {
    const org = await adminJson(server.env, ["org", "create", "--name", unique("Console dup")])
    const existing = await adminJson(server.env, ["sensor", "create", "--org", org.id, "--name", "edge-01"])
    const email = `dup-${crypto.randomUUID().slice(0, 8)}@names.example`
    const user = await adminJson(server.env, ["user", "create", "--org", org.id, "--email", email, "--role", "admin"])
    const base = server.consoleUrl
    const cookieOf = (response: Response, name: string) =>
      response.headers
        .getSetCookie()
        .find((c) => c.startsWith(`${name}=`))
        ?.split(";")[0] ?? ""
    const post = (path: string, fields: Record<string, string>, cookie: string) =>
      fetch(`${base}${path}`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie, origin: base, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(fields),
      })
    const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ""

    const setPath = new URL(user.link).pathname
    const setForm = await fetch(`${base}${setPath}`)
    const password = "a long enough passphrase"
    const set = await post(setPath, { csrf: csrfOf(await setForm.text()), password }, cookieOf(setForm, "__Host-form"))
    expect(set.status).toBe(303)
    const signInForm = await fetch(`${base}/sign-in`)
    const signedIn = await post(
      "/sign-in",
      { csrf: csrfOf(await signInForm.text()), email, password, next: "/settings/sensors" },
      cookieOf(signInForm, "__Host-form"),
    )
    expect(signedIn.status).toBe(303)
    const session = cookieOf(signedIn, "__Host-session")

    const page = await fetch(`${base}/settings/sensors`, { headers: { cookie: session } })
    const created = await post(
      "/settings/sensors",
      { csrf: csrfOf(await page.text()), name: " EDGE-01 ", profile: "generic", heartbeatInterval: "" },
      session,
    )
    expect(created.status).toBe(303)
    const notice = await fetch(`${base}${created.headers.get("location")}`, { headers: { cookie: session } })
    const text = await notice.text()
    // The console words the refusal itself (the CLI says the same in its own terms).
    expect(text).toContain(
      `A sensor named &quot;edge-01&quot; already exists in this organization (${existing.id}); choose another name.`,
    )
    const sensors = (await adminJson(server.env, ["sensor", "list", "--org", org.id])) as Array<{ id: string }>
    expect(sensors.map((s) => s.id)).toEqual([existing.id])
  })
})
