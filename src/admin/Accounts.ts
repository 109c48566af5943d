/** Deprecated path of the old admin services (see legacy.ts); new code imports UserAdmin and SignIn. */
export { Accounts, CLI_ACTOR } from "./legacy.ts"
