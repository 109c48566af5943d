import { Layer } from "effect"
import { OpenIdConnect } from "../platform/outbound/openIdConnect.ts"
import { ApiKeyAdmin } from "./ApiKeyAdmin.ts"
import { Backup } from "./Backup.ts"
import { ChannelAdmin } from "./ChannelAdmin.ts"
import { EmailConfirmations } from "./EmailConfirmations.ts"
import { IgnoreAdmin } from "./IgnoreAdmin.ts"
import { IncidentAdmin } from "./IncidentAdmin.ts"
import { JudgementAdmin } from "./JudgementAdmin.ts"
import { OrgAdmin } from "./OrgAdmin.ts"
import { ProviderSignIn } from "./ProviderSignIn.ts"
import { SensorAdmin } from "./SensorAdmin.ts"
import { SignIn } from "./SignIn.ts"
import { SignInProviderAdmin } from "./SignInProviderAdmin.ts"
import { TwoFactor } from "./TwoFactor.ts"
import { UserAdmin } from "./UserAdmin.ts"

/** One admin service per resource; each checks the AdminActor its caller puts in context. */
const ResourceAdminLive = Layer.mergeAll(
  ApiKeyAdmin.Default,
  SensorAdmin.Default,
  ChannelAdmin.Default,
  UserAdmin.Default,
  IgnoreAdmin.Default,
  JudgementAdmin.Default,
  SignInProviderAdmin.Default,
).pipe(Layer.provideMerge(Layer.mergeAll(OrgAdmin.Default, IncidentAdmin.Default, OpenIdConnect.Default)))

const SignInLive = SignIn.Default.pipe(Layer.provideMerge(TwoFactor.Default))

/**
 * The admin services, the one place where who may do what, how a secret is shown once and what is audited live,
 * and the console's sign-in. The CLI (admin/cli.ts) and the console's settings pages are two faces of them. They
 * need the shared repositories, the channel sender (for "send test") and the configuration.
 */
export const AdminServicesLive = Layer.mergeAll(
  ResourceAdminLive,
  ProviderSignIn.Default.pipe(Layer.provideMerge(SignInLive), Layer.provide(OpenIdConnect.Default)),
  Backup.Default,
  EmailConfirmations.Default,
)
