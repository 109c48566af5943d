-- A third console role, `viewer`: reads the pages and exports an analyst reads, changes nothing and sees no settings.
-- The check made with the table in 0012 has PostgreSQL's default name.
alter table console_users drop constraint console_users_role_check;
alter table console_users add constraint console_users_role_check check (role in ('admin', 'analyst', 'viewer'));
