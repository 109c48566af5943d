-- Sign-in through an organization's OpenID Connect provider: at most one per organization. The client secret is
-- sealed under SECRET_KEY (AES-256-GCM), as channel secrets are. allowed_domains is a JSON array of lower-case domain
-- names; an email domain belongs to one organization's provider at most (the single sign-on form finds it by domain).
create table sign_in_providers (
  org_id            text primary key references organizations (id) on delete cascade,
  issuer            text not null,
  client_id         text not null,
  client_secret_sealed text not null,
  allowed_domains   jsonb not null,
  role_claim        text,
  default_role      text check (default_role in ('admin', 'analyst', 'viewer')),
  password_allowed  boolean not null default true,
  created_at        timestamptz not null,
  updated_at        timestamptz not null
);

-- One row per domain so the database itself keeps a domain to one organization, whatever two admins do at once.
create table sign_in_provider_domains (
  domain  text primary key,
  org_id  text not null references sign_in_providers (org_id) on delete cascade
);
-- Replacing or removing a provider deletes its domains by organization.
create index sign_in_provider_domains_org_idx on sign_in_provider_domains (org_id);

-- A sign-in started at the provider and not yet back: the hash of its state (the browser holds the state in a
-- cookie and the provider returns it), the PKCE verifier (sealed) and the nonce. Spent by the callback: a replayed
-- state finds nothing. Ten minutes.
create table sign_in_provider_requests (
  state_hash     bytea primary key,
  org_id         text not null references organizations (id) on delete cascade,
  verifier_sealed text not null,
  nonce          text not null,
  created_at     timestamptz not null,
  expires_at     timestamptz not null
);
create index sign_in_provider_requests_expires_idx on sign_in_provider_requests (expires_at);
-- Sign-ins in flight are counted per organization (a flood of starts is refused past a bound).
create index sign_in_provider_requests_org_idx on sign_in_provider_requests (org_id, expires_at);

-- Which console user a provider's subject is: the user is found by (issuer, subject) from the second sign-in on, so a
-- changed email at the provider never moves the account.
create table console_user_identities (
  issuer       text not null,
  subject      text not null,
  user_id      text not null references console_users (id) on delete cascade,
  created_at   timestamptz not null,
  last_used_at timestamptz not null,
  primary key (issuer, subject)
);
create index console_user_identities_user_idx on console_user_identities (user_id);
