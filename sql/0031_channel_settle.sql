-- Human channels settle: a Slack or Teams channel waits its settle window (seconds) after an incident's first message
-- to it, so that created → escalated → escalated within seconds becomes one message with the final state; 0 sends
-- every change at once, as machine channels (webhook, syslog, Splunk HEC) always do. At most an hour: the window merges
-- a burst of changes; a first alert held longer is no longer an alert.
alter table webhook_channels
  add column settle_seconds integer not null default 0
    constraint webhook_channels_settle_seconds_check check (settle_seconds between 0 and 3600);

-- The chat channels made before the window existed get their kind's default (domain/channels/slack.ts, teams.ts).
update webhook_channels set settle_seconds = 30 where kind in ('slack', 'teams');

