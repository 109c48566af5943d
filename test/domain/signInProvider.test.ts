import { describe, expect, test } from "bun:test"
import { emailDomain, normalizeDomain, parseDomains, roleFromClaims } from "../../src/domain/signInProvider.ts"

const roleOf = (...args: Parameters<typeof roleFromClaims>) => roleFromClaims(...args)?.role

describe("the email domains a provider admits", () => {
  test("a list as typed: commas, spaces or lines between, case and a trailing dot ignored, duplicates once", () => {
    expect(parseDomains("Example.com, example.org\nsub.example.com.  example.com")).toEqual({
      ok: true,
      domains: ["example.com", "example.org", "sub.example.com"],
    })
  })

  test("anything that is not a domain name is named back, and an empty list is refused", () => {
    for (const bad of ["example", "203.0.113.7", "-bad.example", "bad-.example", "a..example", "ex ample@x.example"]) {
      expect(parseDomains(bad).ok).toBe(false)
    }
    expect(parseDomains("ok.example, @evil.example")).toEqual({
      ok: false,
      rule: 'must be domain names like example.com (not "@evil.example")',
    })
    expect(parseDomains(" , ").ok).toBe(false)
    expect(parseDomains(Array.from({ length: 21 }, (_, i) => `d${i}.example`).join(",")).ok).toBe(false)
  })

  test("an email's domain is after its last @, lower case; none is the empty domain", () => {
    expect(emailDomain("Ann@Example.COM")).toBe("example.com")
    expect(emailDomain('"a@b"@corp.example')).toBe("corp.example")
    expect(emailDomain("no-at-sign")).toBe("")
    expect(normalizeDomain(`${"x".repeat(64)}.example`)).toBeUndefined()
  })
})

describe("the console role a provider's claims give", () => {
  test("the highest of admin, analyst and viewer in the claim, as a string or a list, any case", () => {
    expect(roleOf({ roles: ["viewer", "Analyst"] }, "roles", null)).toBe("analyst")
    expect(roleOf({ roles: "ADMIN" }, "roles", "viewer")).toBe("admin")
    expect(roleOf({ groups: ["staff", "viewer"] }, "groups", null)).toBe("viewer")
  })

  test("a claim URL is one key; a dotted name reads a nested claim (Keycloak's realm_access.roles)", () => {
    expect(roleOf({ "https://decoy.example/role": "analyst" }, "https://decoy.example/role", null)).toBe("analyst")
    expect(roleOf({ realm_access: { roles: ["offline_access", "admin"] } }, "realm_access.roles", null)).toBe("admin")
  })

  test("a role the claim names decides; the default role is marked as not the claim's (it only makes new users)", () => {
    expect(roleFromClaims({ roles: ["analyst"] }, "roles", "viewer")).toEqual({ role: "analyst", fromClaim: true })
    expect(roleFromClaims({ roles: [] }, "roles", "viewer")).toEqual({ role: "viewer", fromClaim: false })
  })

  test("no role in the claim gives the default role, or none (the sign-in is refused)", () => {
    expect(roleOf({ roles: ["guest"] }, "roles", "viewer")).toBe("viewer")
    expect(roleOf({}, "roles", null)).toBeUndefined()
    expect(roleOf({ roles: [{ admin: true }, 7] }, "roles", null)).toBeUndefined()
    expect(roleOf({ roles: ["admin"] }, null, "analyst")).toBe("analyst")
    // An inherited property is not a claim.
    expect(roleOf({}, "constructor", null)).toBeUndefined()
  })
})
