-- Console sessions a user can see and end: each session gets a public id (`ses_` and a ULID body, as every other id),
-- which is what the console shows and posts to end it (the token hash never leaves the server), and the browser's
-- user agent as it signed in, cut to 512 characters (client text: shown escaped, never trusted).
alter table console_sessions add column id text;
alter table console_sessions add column user_agent text;

-- Sessions from before this migration get an id: their creation time in the ULID's time part, random characters after.
update console_sessions s set id = 'ses_' || (
  select string_agg(
    substr(
      '0123456789ABCDEFGHJKMNPQRSTVWXYZ',
      1 + case
        when i <= 10 then ((floor(extract(epoch from s.created_at) * 1000)::bigint >> (5 * (10 - i))) & 31)::int
        else floor(random() * 32)::int
      end,
      1
    ),
    '' order by i)
  from generate_series(1, 26) as i
);

alter table console_sessions alter column id set not null;
alter table console_sessions add constraint console_sessions_id_key unique (id);
alter table console_sessions add constraint console_sessions_user_agent_check
  check (user_agent is null or char_length(user_agent) <= 512);
