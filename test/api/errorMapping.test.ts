import { describe, expect, test } from "bun:test"
import { SqlError } from "@effect/sql/SqlError"
import { EventNotFound, IncidentNotFound } from "../../src/api/errors.ts"
import { CursorInvalid, InvalidQuery, QueryParameterRepeated, TimeRangeInverted } from "../../src/api/params.ts"
import { authProblem, lookupProblem, queryProblem } from "../../src/api/problems.ts"
import { ApiKeyId, OrgId } from "../../src/domain/ids.ts"
import { DatabaseError } from "../../src/platform/db/errors.ts"
import { databaseFailureKind } from "../../src/platform/http/problems.ts"
import {
  AuthorizationMalformed,
  DeceptionDisabled,
  type KeyAuthError,
  KeyExpired,
  KeyMalformed,
  KeyMismatch,
  KeyMissing,
  KeyRevoked,
  KeyUnknown,
  ScopeMissing,
} from "../../src/repos/KeyAuth.ts"

/**
 * The API edge's mapping of tagged errors to problem documents (D4): pure, tag in, problem out. The HTTP side of
 * each (headers, content type, the bytes on the wire) is asserted end to end in auth, validation, incidents and
 * events tests; here every tag's status, code and detail.
 */

const plain = (p: { type: string; title: string; status: number; code: string; detail: string }) => ({
  type: p.type,
  title: p.title,
  status: p.status,
  code: p.code,
  detail: p.detail,
})

const unauthorized = (detail: string) => ({
  type: "about:blank",
  title: "Unauthorized",
  status: 401,
  code: "unauthorized",
  detail,
})
const forbidden = (code: string, detail: string) => ({
  type: "about:blank",
  title: "Forbidden",
  status: 403,
  code,
  detail,
})
const badRequest = (detail: string) => ({
  type: "about:blank",
  title: "Bad Request",
  status: 400,
  code: "invalid_request",
  detail,
})

const KEY_ID = ApiKeyId.make("key_01ARZ3NDEKTSV4RRFFQ69G5FAV")
const NOT_VALID = "The API key is not valid. Send Authorization: Bearer <API_KEY>."

describe("authProblem: spec 'API keys' 7-8, D10", () => {
  const cases: ReadonlyArray<[KeyAuthError, ReturnType<typeof unauthorized>]> = [
    [new KeyMissing(), unauthorized("The Authorization header is missing. Send Authorization: Bearer <API_KEY>.")],
    [new AuthorizationMalformed(), unauthorized("The Authorization header must be Bearer <API_KEY>.")],
    [new KeyMalformed(), unauthorized(NOT_VALID)],
    [new KeyUnknown(), unauthorized(NOT_VALID)],
    [new KeyMismatch({ keyId: KEY_ID }), unauthorized(NOT_VALID)],
    [new KeyRevoked({ keyId: KEY_ID }), unauthorized("The API key has been revoked.")],
    [new KeyExpired({ keyId: KEY_ID }), unauthorized("The API key has expired.")],
    [
      new DeceptionDisabled({ keyId: KEY_ID, orgId: OrgId.make("org_01ARZ3NDEKTSV4RRFFQ69G5FAV") }),
      forbidden("feature_disabled", "The Deception feature is not active for this organization."),
    ],
    [
      new ScopeMissing({ keyId: KEY_ID, scope: "events:read" }),
      forbidden("insufficient_scope", "This endpoint requires a key with the scope events:read."),
    ],
    [
      new ScopeMissing({ keyId: KEY_ID, scope: "incidents:read" }),
      forbidden("insufficient_scope", "This endpoint requires a key with the scope incidents:read."),
    ],
  ]
  for (const [error, expected] of cases) {
    test(`${error._tag} -> ${expected.status} ${expected.code}: ${expected.detail}`, () => {
      expect(plain(authProblem(error))).toEqual(expected)
    })
  }

  test("a malformed token, an unknown key id and a wrong secret get one and the same answer", () => {
    const answers = [new KeyMalformed(), new KeyUnknown(), new KeyMismatch({ keyId: KEY_ID })].map((e) =>
      JSON.stringify(plain(authProblem(e))),
    )
    expect(new Set(answers).size).toBe(1)
  })
})

describe("queryProblem: every bad query parameter is one clear problem", () => {
  const cases: ReadonlyArray<[Parameters<typeof queryProblem>[0], string]> = [
    [new QueryParameterRepeated({ parameter: "limit" }), "The query parameter limit was given more than once."],
    [
      new InvalidQuery({ parameter: "status", allowed: "one of: open, closed, all (default all)" }),
      "status must be one of: open, closed, all (default all).",
    ],
    [new TimeRangeInverted(), "from must not be later than to."],
    [
      new CursorInvalid({ problem: "malformed" }),
      "cursor is malformed or was tampered with; use the nextCursor value of a previous response.",
    ],
    [
      new CursorInvalid({ problem: "mismatch" }),
      "cursor was issued for another endpoint, other filters or another organization; start again from the first page.",
    ],
  ]
  for (const [error, detail] of cases) {
    test(`${error._tag} -> 400 invalid_request: ${detail}`, () => {
      expect(plain(queryProblem(error))).toEqual(badRequest(detail))
    })
  }
})

describe("lookupProblem: 404 only after authentication, so ids cannot be probed", () => {
  test("IncidentNotFound and EventNotFound -> 404 not_found, the id not echoed", () => {
    const notFound = (detail: string) => ({
      type: "about:blank",
      title: "Not Found",
      status: 404,
      code: "not_found",
      detail,
    })
    const odd = "<script>x</script>"
    expect(plain(lookupProblem(new IncidentNotFound({ id: odd })))).toEqual(
      notFound("No incident with this id exists in your organization."),
    )
    expect(plain(lookupProblem(new EventNotFound({ id: odd })))).toEqual(
      notFound("No event with this id exists in your organization."),
    )
  })
})

describe("databaseFailureKind: what a failed query is answered with", () => {
  const failure = (code: string | undefined, message: string) =>
    new DatabaseError({
      cause: new SqlError({
        cause: Object.assign(new Error(message), code === undefined ? {} : { code }),
        message: "x",
      }),
    })
  test.each([
    ["57P01", "terminating connection due to administrator command", "unreachable"],
    ["57P03", "the database system is starting up", "unreachable"],
    ["57P02", "terminating connection because of crash of another server process", "unreachable"],
    ["08006", "server closed the connection", "unreachable"],
    [undefined, "Connection terminated: Connection closed (ERR_POSTGRES_CONNECTION_CLOSED)", "unreachable"],
    [undefined, "connection refused (ECONNREFUSED)", "unreachable"],
    ["57014", "canceling statement due to statement timeout", "busy"],
    ["53300", "sorry, too many clients already", "busy"],
    [undefined, "Query read timeout", "busy"],
    [undefined, "timeout exceeded when trying to connect", "busy"],
    ["23505", "duplicate key value violates unique constraint", "internal"],
    ["42P01", "relation does not exist", "internal"],
  ] as const)("%s %s -> %s", (code, message, kind) => {
    expect(databaseFailureKind(failure(code, message))).toBe(kind)
  })
})
