-- Honeypot lines stored by earlier versions have an unkeyed SHA-256 of the whole log line as their sensor event id
-- (`oc:<sha256>`, `cowrie:<session>:<sha256>`). The line held the captured password and most of its other fields
-- sit beside the id, so the hash let anyone holding the database test password guesses offline (D19). Those ids are
-- replaced by one that says nothing. The cost: such a line, if a sensor sent it again now, is stored again; it would
-- be anyway, since new lines get keyed ids (`oc:k1:…`, `cw:k1:…`): a deliberate exception to D22's "never stored
-- twice", for lines stored before this version only. A native event whose own id happens to have exactly this form
-- is renamed too (and would be stored again if resent).
update events set sensor_event_id = 'legacy:' || id
where sensor_event_id ~ '^(oc:[0-9a-f]{64}|cowrie:[A-Za-z0-9_-]{1,64}:[0-9a-f]{64})$';
