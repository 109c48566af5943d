import { Command } from "@effect/cli"
import { Effect, Option } from "effect"
import { SignInProviderAdmin } from "../SignInProviderAdmin.ts"
import { argument, asAdmin, credential, flag, json, optionalFlag, print, required, usage } from "./shared.ts"

type Shown = Effect.Effect.Success<ReturnType<SignInProviderAdmin["set"]>>

const describe = (p: Shown) =>
  [
    `issuer: ${p.issuer}`,
    `client id: ${p.clientId}`,
    "client secret: (sealed)",
    `email domains: ${p.allowedDomains.join(", ")}`,
    `role claim: ${p.roleClaim ?? "none"}`,
    `default role: ${p.defaultRole ?? "none"}`,
    `password sign-in: ${p.passwordSignIn}`,
    `redirect URL to register at the provider: ${p.redirectUrl}`,
  ].join("\n")

const orgFlag = flag("org", "<org-id>", "the organization")

const show = Command.make("show", { orgId: orgFlag, json }, ({ orgId, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const found = yield* (yield* SignInProviderAdmin).get(orgId)
      const value = Option.getOrNull(found)
      return yield* print(json, value, () =>
        value === null ? `${orgId} has no sign-in provider: passwords only` : describe(value),
      )
    }),
  ),
).pipe(Command.withDescription("the organization's OpenID Connect provider (never its client secret)"))

const set = Command.make(
  "set",
  {
    orgId: orgFlag,
    issuer: optionalFlag("issuer", "<url>", "the provider's issuer URL (https; its discovery document is read now)"),
    clientId: optionalFlag("client-id", "<id>", "the client id the provider gave this service"),
    clientSecret: optionalFlag(
      "client-secret",
      "-",
      "- reads the client secret from standard input (sealed, never shown); leave out to keep the stored one",
    ),
    domains: optionalFlag("domains", "<a.example,b.example>", "the email domains it signs in"),
    roleClaim: optionalFlag("role-claim", "<claim>", 'the claim holding admin, analyst or viewer ("" for none)'),
    defaultRole: optionalFlag("default-role", "viewer|analyst|admin|none", "the role when the claim gives none"),
    passwordSignIn: optionalFlag("password-sign-in", "on|off", "whether passwords still sign in (default on)"),
    json,
  },
  (options) =>
    asAdmin(
      Effect.gen(function* () {
        if (options.clientSecret !== undefined && options.clientSecret !== "-") {
          return yield* usage(
            "--client-secret takes only - (the secret is read from standard input, never the command line)",
          )
        }
        const clientSecret =
          options.clientSecret === undefined ? undefined : yield* credential(options.clientSecret, "--client-secret")
        const shown = yield* (yield* SignInProviderAdmin).set(options.orgId, { ...options, clientSecret })
        return yield* print(
          options.json,
          shown,
          () => `sign-in provider saved for ${options.orgId}\n${describe(shown)}`,
        )
      }),
    ),
).pipe(
  Command.withDescription(
    "set or change the organization's OpenID Connect provider (checked against the provider before it is stored)",
  ),
)

const passwords = Command.make(
  "passwords",
  { orgId: orgFlag, state: argument("on|off", "on: passwords sign in too; off: only the provider"), json },
  ({ orgId, state, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const done = yield* (yield* SignInProviderAdmin).setPasswordSignIn(orgId, yield* required(state, "on|off"))
        return yield* print(json, done, () =>
          done.passwordSignIn === "on"
            ? `${done.id}: passwords sign in again, besides the provider`
            : `${done.id}: only the provider signs people in`,
        )
      }),
    ),
).pipe(Command.withDescription("passwords on or off beside the provider (no call to the provider: for when it fails)"))

const remove = Command.make("remove", { orgId: orgFlag, json }, ({ orgId, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const done = yield* (yield* SignInProviderAdmin).remove(orgId)
      return yield* print(json, done, () =>
        done.removed ? `${done.id}: sign-in provider removed; passwords only` : `${done.id} had no sign-in provider`,
      )
    }),
  ),
).pipe(Command.withDescription("remove the organization's provider (users and their roles stay)"))

export const signIn = Command.make("sign-in").pipe(
  Command.withDescription("single sign-on through the organization's OpenID Connect provider"),
  Command.withSubcommands([show, set, passwords, remove]),
)
