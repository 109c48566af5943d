-- D42: a Cowrie session's client members (SSH client version, HASSH, terminal size, environment, offered key,
-- JA4/JA4H, session duration) are kept per session, already bounded: for each member the earliest line's value, for
-- the environment the first 32 variables (each value cut to 256 code points). The Ingestor updates it under the
-- session's lock and rewrites the session's events only when the members it gives them change; a session's work per
-- request no longer grows with its number of merged lines. `cowrie_session_details` (every merged line, read back on
-- each request of the session) is no longer written; its rows are pruned by age like the rest.
alter table cowrie_sessions add column client jsonb;
