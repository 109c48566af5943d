-- The web console (D25–D31): users, their one-time password links, sessions, sign-in failures and the audit log.

create table console_users (
  id             text primary key,
  org_id         text not null references organizations (id),
  -- Stored lower-cased: one account per address whatever the case typed at sign-in.
  email          text not null unique,
  role           text not null check (role in ('admin', 'analyst')),
  -- D26: argon2id (Bun.password), never the password; null until the user sets one through the link.
  password_hash  text,
  disabled_at    timestamptz,
  created_at     timestamptz not null
);
create index console_users_org_idx on console_users (org_id, created_at);

-- D26: the one-time set-password link; only a SHA-256 hash of its token is stored. Used once, valid 24 h.
create table console_password_links (
  token_hash  bytea primary key,
  user_id     text not null references console_users (id),
  expires_at  timestamptz not null,
  used_at     timestamptz,
  created_at  timestamptz not null
);
create index console_password_links_user_idx on console_password_links (user_id);

-- D27: sessions in the database so every replica sees them; only a SHA-256 hash of the cookie value is stored.
create table console_sessions (
  token_hash    bytea primary key,
  user_id       text not null references console_users (id),
  -- D28: the synchronizer token of this session's forms.
  csrf_token    text not null,
  created_at    timestamptz not null,
  last_seen_at  timestamptz not null,
  -- Absolute end (7 days); the idle end (12 h) is last_seen_at + 12 h.
  expires_at    timestamptz not null,
  ip            text not null
);
create index console_sessions_user_idx on console_sessions (user_id);

-- D27: failed sign-ins of the last 15 minutes, by email and by IP (shared by every replica).
create table console_signin_failures (
  email  text not null,
  ip     text not null,
  at     timestamptz not null
);
create index console_signin_failures_email_idx on console_signin_failures (email, at);
create index console_signin_failures_ip_idx on console_signin_failures (ip, at);

-- D31: every change made in the console or with the admin CLI; never a secret.
create table audit_log (
  id        text primary key,
  org_id    text,
  -- A console user's id, or 'cli'.
  actor     text not null,
  action    text not null,
  target    text,
  ip        text,
  detail    text,
  at        timestamptz not null
);
create index audit_log_org_idx on audit_log (org_id, at desc, id desc);

-- D28: what a POST has to tell the page it redirects to (303): a notice, a refusal's reason, or a secret shown once
-- (a new API key or signing secret, sealed under SECRET_KEY). Read once by the same session, then deleted.
create table console_flashes (
  id            text primary key,
  session_hash  bytea not null,
  body          text not null,
  expires_at    timestamptz not null
);
