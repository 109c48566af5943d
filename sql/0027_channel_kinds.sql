-- D46/D47: a channel has a kind (how it is sent) and a format (what it sends). Every existing channel is a signed
-- webhook in the native shape. The `secret_enc` of a kind holds what must stay secret: a webhook's signing secret, a
-- Splunk HEC token, or the whole Slack or Teams URL (whose path is the credential; `url` then keeps only its origin,
-- for display). A syslog channel has none.
alter table webhook_channels
  add column kind text not null default 'webhook'
    check (kind in ('webhook', 'slack', 'teams', 'syslog', 'splunk_hec')),
  add column format text not null default 'native' check (format in ('native', 'ocsf')),
  alter column secret_enc drop not null,
  add constraint webhook_channels_secret_by_kind check ((kind = 'syslog') = (secret_enc is null)),
  add constraint webhook_channels_ocsf_kinds check (format = 'native' or kind in ('webhook', 'syslog', 'splunk_hec'));

-- A close is queued only for OCSF channels (D47's Close activity); the spec's webhook never announces it.
comment on column webhook_deliveries.type is
  'Body type: incident.created, incident.escalated, incident.reopened, incident.closed (OCSF channels only), webhook.test, sensor.silent, sensor.recovered';
