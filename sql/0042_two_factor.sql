-- Two-factor codes (TOTP, RFC 6238) for console sign-in. A user's secret is sealed under SECRET_KEY (AES-256-GCM),
-- counts only once confirmed with a current code, and keeps the last time step it accepted so no code is taken twice.
create table console_two_factor (
  user_id text primary key references console_users (id) on delete cascade,
  secret_sealed text not null,
  created_at timestamptz not null,
  confirmed_at timestamptz,
  last_step bigint
);

-- Ten one-time recovery codes per enrolment, stored as SHA-256 hashes; each is spent once.
create table console_recovery_codes (
  user_id text not null references console_users (id) on delete cascade,
  code_hash bytea not null,
  used_at timestamptz,
  primary key (user_id, code_hash)
);

-- An administrator can require two-factor codes for every user of the organization.
alter table organizations add column require_two_factor boolean not null default false;

-- The step between a right password and the code: a random token (its hash here) held by the browser in a cookie,
-- for 5 minutes, for one user and the known device the password step gave that browser; spent by the code step.
create table console_pending_signins (
  token_hash bytea primary key,
  user_id text not null references console_users (id) on delete cascade,
  device_id text not null,
  created_at timestamptz not null,
  expires_at timestamptz not null
);
create index console_pending_signins_expires_idx on console_pending_signins (expires_at);

-- A session of a user who must enrol (the organization requires codes and the user has none) opens only enrolment.
alter table console_sessions add column enrol_only boolean not null default false;
