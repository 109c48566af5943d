import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { auditChangesStatement } from "../../src/api/ChangesRepo.ts"
import type { AuditFilters } from "../../src/domain/audit.ts"
import type { OrgId } from "../../src/domain/ids.ts"
import { auditListStatement } from "../../src/repos/AuditRepo.ts"
import type { SqlText } from "../../src/repos/statement.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createTenant } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * The audit trail's statements (built by the same pure functions the API and the CLI run), planned with sequential
 * scans and sorts priced out, as test/db/explain.test.ts does for the other lists and feeds: every filter combination
 * of GET /v1/audit walks the organization's (org_id, at desc, id desc) index in order, and a page of
 * GET /v1/audit/changes is one range scan of the position index.
 */

let server: RunningServer
let db: TestDatabase
let orgId: OrgId

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  ;({ orgId } = await createTenant(db, "Audit plans"))
})

afterAll(() => shutdown(server, db))

const explain = (statements: ReadonlyArray<[string, SqlText]>) =>
  db.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const plans: Array<[string, string]> = []
      for (const [name, { text, params }] of statements) {
        const plan = yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`set local enable_seqscan = off`
            yield* sql`set local enable_sort = off`
            const rows = yield* sql.unsafe<Record<string, string>>(`explain ${text}`, params)
            return rows.map((r) => Object.values(r)[0]).join("\n")
          }),
        )
        plans.push([name, plan])
      }
      return plans
    }),
  )

test("every audit list statement, with every combination of filters and with a cursor, walks the organization's index without a sort", async () => {
  const t = new Date()
  const options: Record<string, Partial<AuditFilters>> = {
    actorId: { actor: { id: "cli" } },
    actorEmail: { actor: { email: "ann@example.com" } },
    action: { action: "key.create" },
    from: { from: new Date(t.getTime() - 3600_000) },
    to: { to: t },
  }
  const names = Object.keys(options)
  const statements: Array<[string, SqlText]> = []
  for (let mask = 0; mask < 2 ** names.length; mask++) {
    const chosen = names.filter((_, i) => (mask & (1 << i)) !== 0)
    // One actor at a time: the two forms are one parameter.
    if (chosen.includes("actorId") && chosen.includes("actorEmail")) continue
    const filters = Object.assign({}, ...chosen.map((n) => options[n])) as AuditFilters
    for (const after of [undefined, { time: t, id: "aud_Z" }]) {
      statements.push([
        `audit ${chosen.join("+") || "(no filter)"} cursor=${after !== undefined}`,
        auditListStatement({ orgId, filters, after, fetch: 51 }),
      ])
    }
  }
  const plans = await explain(statements)
  expect(plans.length).toBe((2 ** 5 - 2 ** 3) * 2)
  for (const [name, plan] of plans) {
    expect({ name, seqScan: /Seq Scan on audit_log/.test(plan) }).toEqual({ name, seqScan: false })
    expect({ name, sorts: /\bSort\b/.test(plan) }).toEqual({ name, sorts: false })
    expect({ name, index: plan.includes("audit_log_org_idx") }).toEqual({ name, index: true })
  }
})

test("an audit feed page is one range scan of its position index, from the start, from a token and with from", async () => {
  const statements: Array<[string, SqlText]> = []
  for (const after of [
    { xid: "0", seq: "0", fromMs: null },
    { xid: "123456", seq: "98765", fromMs: null },
    { xid: "0", seq: "0", fromMs: Date.now() - 3600_000 },
  ]) {
    statements.push([
      `audit feed after ${after.xid} from ${after.fromMs}`,
      auditChangesStatement({ orgId, after, fetch: 51 }),
    ])
  }
  for (const [name, plan] of await explain(statements)) {
    expect({ name, seqScan: /Seq Scan on audit_log/.test(plan) }).toEqual({ name, seqScan: false })
    expect({ name, sorts: /\bSort\b/.test(plan) }).toEqual({ name, sorts: false })
    expect({ name, index: plan.includes("audit_log_org_change_idx") }).toEqual({ name, index: true })
  }
})
