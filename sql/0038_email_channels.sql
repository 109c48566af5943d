-- Email is a channel kind. Its messages go through the operator's one SMTP server (SMTP_URL), so the channel keeps no
-- secret and no address of its own: `url` is `mailto:` and its people are its recipients, below.
alter table webhook_channels drop constraint webhook_channels_kind_check;
alter table webhook_channels
  add constraint webhook_channels_kind_check
    check (kind in ('webhook', 'slack', 'teams', 'syslog', 'splunk_hec', 'email'));
alter table webhook_channels drop constraint webhook_channels_secret_by_kind;
alter table webhook_channels
  add constraint webhook_channels_secret_by_kind check ((kind in ('syslog', 'email')) = (secret_enc is null));

-- An email channel's recipients. Nobody can make the service mail a stranger: a recipient gets alerts only once they
-- have confirmed by the link mailed to them (its token kept here as a SHA-256 hash until then, and valid until
-- `confirm_expires_at`); until then they get nothing but that one message. Addresses are stored as given with the
-- domain lower-cased, so one person is one row per channel.
create table email_recipients (
  channel_id          text not null references webhook_channels (id) on delete cascade,
  org_id              text not null references organizations (id),
  address             text not null check (length(address) between 3 and 254),
  confirm_token_hash  bytea unique check (octet_length(confirm_token_hash) = 32),
  confirm_expires_at  timestamptz,
  invited_at          timestamptz not null,
  confirmed_at        timestamptz,
  primary key (channel_id, address),
  check ((confirmed_at is null) = (confirm_token_hash is not null)),
  check ((confirm_token_hash is null) = (confirm_expires_at is null))
);
