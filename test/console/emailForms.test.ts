import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { adminJson, admin as runAdmin } from "../support/cli.ts"
import { cookieOf } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createTenant, createUser as makeUser } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * One console user per mailbox, whichever way its email is typed: in any case, with spaces around it, or with the
 * trailing dot of a fully qualified domain (`Ann@Example.com.`). Creation, sign-in and unlock read it the same way, on
 * the real server through the real CLI; a user that an older version stored with the dot still signs in.
 */

const PASSWORD = "a long enough passphrase 3"
const FORM_CSRF = /name="csrf" value="([^"]+)"/
const RUN = Date.now().toString(36)

let server: RunningServer
let db: TestDatabase
let consoleUrl: string
let orgId: string
let ipCounter = 0
/** A fresh client address (documentation range 198.18.0.0/15) for each sign-in, so no lock of another test counts. */
const newIp = () => `198.18.${Math.floor(++ipCounter / 250)}.${(ipCounter % 250) + 1}`

const openForm = async (path: string) => {
  const form = await fetch(`${consoleUrl}${path}`)
  const text = await form.text()
  return { csrf: FORM_CSRF.exec(text)?.[1] ?? "", cookie: cookieOf(form, "__Host-form") ?? "" }
}

const postForm = (path: string, fields: Record<string, string>, cookie: string) =>
  fetch(`${consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: {
      cookie,
      "content-type": "application/x-www-form-urlencoded",
      origin: consoleUrl,
      "x-forwarded-for": newIp(),
    },
    body: new URLSearchParams(fields),
  })

/** Signs in; the session cookie when the console let the user in. */
const signIn = async (email: string, password = PASSWORD) => {
  const form = await openForm("/sign-in")
  const response = await postForm("/sign-in", { csrf: form.csrf, email, password, next: "/" }, form.cookie)
  return { status: response.status, session: cookieOf(response, "__Host-session") }
}

const createUser = (email: string) =>
  runAdmin(server.env, ["user", "create", "--org", orgId, "--email", email, "--role", "analyst", "--json"])

const setPassword = async (link: string) => {
  const path = new URL(link).pathname
  const form = await openForm(path)
  const set = await postForm(path, { csrf: form.csrf, password: PASSWORD }, form.cookie)
  expect(set.status).toBe(303)
}

beforeAll(async () => {
  server = await startServer({ env: await testEnv({ TRUST_PROXY: "127.0.0.1" }) })
  consoleUrl = server.consoleUrl
  db = testDatabase(server.env)
  orgId = (await createTenant(db, `Email forms ${RUN}`)).orgId
}, 120_000)

afterAll(async () => {
  await shutdown(server, db)
})

test("an email typed with a trailing dot is the same user as without it: stored once, refused twice, signs in either way", async () => {
  const created = await createUser(`  Ann-${RUN}@Example.com.  `)
  expect(created.code).toBe(0)
  const user = JSON.parse(created.stdout) as { id: string; email: string; link: string }
  expect(user.email).toBe(`ann-${RUN}@example.com`)
  await setPassword(user.link)

  // The same mailbox again, with or without the dot, is refused as any taken email.
  for (const again of [`ann-${RUN}@example.com`, `ANN-${RUN}@EXAMPLE.COM.`, `ann-${RUN}@example.com..`]) {
    const refused = await createUser(again)
    expect({ again, code: refused.code }).toEqual({ again, code: 1 })
    expect(refused.stderr).toContain("this email cannot be used for a new user")
  }

  // Sign-in reads the email as creation did.
  for (const typed of [`ann-${RUN}@example.com`, `Ann-${RUN}@Example.com.`, ` ANN-${RUN}@EXAMPLE.COM. `]) {
    const answer = await signIn(typed)
    expect({ typed, status: answer.status, signedIn: answer.session !== undefined }).toEqual({
      typed,
      status: 303,
      signedIn: true,
    })
  }

  // And so does unlock.
  const unlocked = await adminJson(server.env, ["user", "unlock", `Ann-${RUN}@Example.com.`])
  expect(unlocked.id).toBe(user.id)
})

test("a user an older version stored with the trailing dot signs in with or without it, and cannot be created again", async () => {
  // Made by the admin service as the operator: what the CLI does with this email is the first test's subject.
  const created = await makeUser(db, orgId, `bob-${RUN}@example.com`, "analyst")
  await setPassword(created.link)
  // The row as an older version wrote it, which kept the dot it was typed with.
  await db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql`update console_users set email = ${`bob-${RUN}@example.com.`} where id = ${created.id}`,
    ),
  )
  for (const typed of [`bob-${RUN}@example.com`, `Bob-${RUN}@Example.com.`]) {
    const answer = await signIn(typed)
    expect({ typed, signedIn: answer.session !== undefined }).toEqual({ typed, signedIn: true })
  }
  const refused = await createUser(`bob-${RUN}@example.com`)
  expect(refused.code).toBe(1)
  expect(refused.stderr).toContain("this email cannot be used for a new user")
  // A wrong password is still wrong.
  expect((await signIn(`bob-${RUN}@example.com`, "not the passphrase at all")).session).toBeUndefined()
})
