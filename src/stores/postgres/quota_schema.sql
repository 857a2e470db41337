-- Sluice's durable quotas on PostgreSQL: the table and the functions the quota store calls.
-- Run as one transaction (the simple query protocol runs a string of statements as one) by the
-- first connection of a gateway that finds them missing, and by `sluice quota init`; every
-- statement may run again. The advisory lock keeps two gateways starting at once from racing
-- on the catalog (CREATE TABLE IF NOT EXISTS is not safe against a concurrent one).
-- Functions carry a version in their names, so that gateways of two versions can share a
-- database during an upgrade.
SELECT pg_advisory_xact_lock(7239120569427918849);
-- "already exists, skipping" is what a second run is expected to say; not worth a line of log.
SET LOCAL client_min_messages = warning;

-- One row per quota and window: the rule's bucket family, the attribute's value as the request
-- carried it (any bytes: bytea needs no escaping and holds NUL), the window, and what it used.
-- The limit is not stored: it is the configuration's, so that a reload changes it at once.
-- The key holds the window's end as well as its start: windows of two lengths that start
-- together (a rule's period changed from hour to day, or gateways of two configurations side by
-- side) are two quotas with counts of their own, never one row that the shorter window's end
-- would delete, the longer one's count with it.
CREATE TABLE IF NOT EXISTS sluice_quota (
  bucket text COLLATE "C" NOT NULL,
  value bytea NOT NULL,
  window_start timestamptz NOT NULL,
  window_end timestamptz NOT NULL,
  used bigint NOT NULL,
  PRIMARY KEY (bucket, value, window_start, window_end)
);

-- The table of Sluice's first schema (its primary key without window_end) gets the key above.
-- Gateways of that version then fail their checks (their functions name the old key) rather
-- than share a row between windows.
DO $key$
DECLARE
  old_key name;
BEGIN
  SELECT c.conname INTO old_key
    FROM pg_constraint AS c
   WHERE c.conrelid = to_regclass('sluice_quota') AND c.contype = 'p'
     AND (SELECT array_agg(a.attname::text ORDER BY k.ord)
            FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
            JOIN pg_attribute AS a ON a.attrelid = c.conrelid AND a.attnum = k.attnum)
         = ARRAY['bucket', 'value', 'window_start'];
  IF old_key IS NOT NULL THEN
    EXECUTE format('ALTER TABLE sluice_quota DROP CONSTRAINT %I, '
                   'ADD PRIMARY KEY (bucket, value, window_start, window_end)', old_key);
  END IF;
END
$key$;

-- The window that holds `at`, its start and its end: a UTC calendar period ('day', 'week' from
-- Monday 00:00, 'month', 'year'), or, when `period` is '', a span of `duration_ms` aligned to the
-- Unix epoch as fixed-window rules' windows are. Computed in UTC whatever the session's TimeZone.
-- Single expressions, so that the planner inlines them into the statements that call them.
CREATE OR REPLACE FUNCTION sluice_quota_start_v2(period text, duration_ms bigint, at timestamptz)
RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $start$
  SELECT CASE WHEN period = ''
    THEN to_timestamp(0) + (floor(extract(epoch FROM at) * 1000)::bigint
                            - floor(extract(epoch FROM at) * 1000)::bigint % duration_ms)
                           * interval '1 millisecond'
    ELSE date_trunc(period, at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' END
$start$;

CREATE OR REPLACE FUNCTION sluice_quota_end_v2(period text, duration_ms bigint, at timestamptz)
RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $end$
  SELECT CASE period
    WHEN '' THEN sluice_quota_start_v2(period, duration_ms, at) + duration_ms * interval '1 millisecond'
    WHEN 'day' THEN (date_trunc('day', at AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC'
    WHEN 'week' THEN (date_trunc('week', at AT TIME ZONE 'UTC') + interval '7 days') AT TIME ZONE 'UTC'
    WHEN 'month' THEN (date_trunc('month', at AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'
    WHEN 'year' THEN (date_trunc('year', at AT TIME ZONE 'UTC') + interval '1 year') AT TIME ZONE 'UTC'
  END
$end$;

-- Takes a batch of checks in one statement, which is one transaction: one commit (one WAL flush)
-- for all of them. Op i belongs to request requests[i]; a request's ops are adjacent, and the
-- requests come in the order they arrived. A request is all or nothing: its ops are charged only
-- when every enforced one fits in what its window has left (used + cost <= limit), and a later
-- request sees what an earlier one took. Every row the batch touches is locked (or created) first,
-- in key order, by one statement, so that batches of several connections and gateways never
-- deadlock; each row is then written once, with what the batch took from it.
-- `at`: the time to count at; NULL (always, outside tests) for the database's now().
-- One row per op, in order: whether it fits (would be allowed), whether it was charged, the
-- window's count after the batch's earlier requests and this one, the window (Unix ms), and the
-- clock the windows were computed at (Unix ms).
CREATE OR REPLACE FUNCTION sluice_quota_take_v2(requests integer[], buckets text[], vals bytea[],
                                                limits bigint[], costs bigint[], periods text[],
                                                durations bigint[], enforced boolean[],
                                                at timestamptz)
RETURNS TABLE (fits boolean, charged boolean, used bigint, window_start_ms bigint,
               window_end_ms bigint, now_ms bigint)
-- The batch's rows are few among many: found by address (a TID scan) or key (an index scan),
-- never by a scan of the table, which is what a hash or merge join of the batch's rows would
-- choose. Its statements are planned once a session: their plans do not depend on the arrays.
SET enable_hashjoin = off SET enable_mergejoin = off SET plan_cache_mode = force_generic_plan
LANGUAGE plpgsql AS $take$
#variable_conflict use_column
DECLARE
  clock constant timestamptz := coalesce(at, now());
  n constant integer := coalesce(array_length(requests, 1), 0);
  key_of integer[];      -- op -> its row's index among the batch's distinct rows, in key order
  starts bigint[];       -- op -> its window's start, Unix ms
  ends bigint[];         -- op -> its window's end, Unix ms
  row_tid tid[];         -- row index -> where the row is (locked, so its latest version)
  row_before bigint[];   -- row index -> used when locked
  row_used bigint[];     -- row index -> used as the batch goes
  op_fits boolean[] := array_fill(false, ARRAY[n]);
  op_charged boolean[] := array_fill(false, ARRAY[n]);
  op_used bigint[] := array_fill(0::bigint, ARRAY[n]);
  first integer := 1;
  last integer;
  all_fit boolean;
BEGIN
  IF n = 0 THEN
    RETURN;
  END IF;
  -- Each op's row and window (computed once per distinct period), and the lock of every row in
  -- key order: an existing row is locked, not written (ON CONFLICT locks the rows it would
  -- update, and WHERE false updates none), a missing one is inserted.
  WITH windows AS MATERIALIZED (
    SELECT p, d, sluice_quota_start_v2(p, d, clock) AS s, sluice_quota_end_v2(p, d, clock) AS e
      FROM (SELECT DISTINCT p, d FROM unnest(periods, durations) AS u(p, d)) AS x
  ),
  ops AS MATERIALIZED (
    SELECT o.i, o.b, o.v, w.s, w.e,
           dense_rank() OVER (ORDER BY o.b COLLATE "C", o.v, w.s, w.e)::integer AS k
      FROM unnest(buckets, vals, periods, durations) WITH ORDINALITY AS o(b, v, p, d, i)
      JOIN windows AS w ON w.p = o.p AND w.d = o.d
  ),
  locked AS (
    INSERT INTO sluice_quota AS q (bucket, value, window_start, window_end, used)
    SELECT DISTINCT ON (k) b, v, s, e, 0 FROM ops ORDER BY k
    ON CONFLICT (bucket, value, window_start, window_end) DO UPDATE SET used = q.used WHERE false
  )
  SELECT array_agg(k ORDER BY i), array_agg(floor(extract(epoch FROM s) * 1000)::bigint ORDER BY i),
         array_agg(floor(extract(epoch FROM e) * 1000)::bigint ORDER BY i)
    INTO key_of, starts, ends
    FROM ops;
  -- A new statement, a new snapshot: it sees the latest version of every row locked above.
  SELECT array_agg(q.ctid ORDER BY q.bucket COLLATE "C", q.value, q.window_start, q.window_end),
         array_agg(q.used ORDER BY q.bucket COLLATE "C", q.value, q.window_start, q.window_end)
    INTO row_tid, row_before
    FROM (SELECT DISTINCT o.b, o.v, sluice_quota_start_v2(o.p, o.d, clock) AS s,
                 sluice_quota_end_v2(o.p, o.d, clock) AS e
            FROM unnest(buckets, vals, periods, durations) AS o(b, v, p, d)) AS r
    JOIN sluice_quota AS q
      ON q.bucket = r.b AND q.value = r.v AND q.window_start = r.s AND q.window_end = r.e;
  row_used := row_before;

  WHILE first <= n LOOP
    last := first;
    WHILE last < n AND requests[last + 1] = requests[first] LOOP
      last := last + 1;
    END LOOP;
    all_fit := true;
    FOR i IN first..last LOOP
      op_fits[i] := row_used[key_of[i]] + costs[i] <= limits[i];
      IF enforced[i] AND NOT op_fits[i] THEN
        all_fit := false;
      END IF;
    END LOOP;
    FOR i IN first..last LOOP
      IF all_fit AND op_fits[i] THEN
        row_used[key_of[i]] := row_used[key_of[i]] + costs[i];
        op_charged[i] := true;
      END IF;
      op_used[i] := row_used[key_of[i]];
    END LOOP;
    first := last + 1;
  END LOOP;

  UPDATE sluice_quota AS q SET used = c.used
    FROM unnest(row_tid, row_used, row_before) AS c(t, used, before)
   WHERE q.ctid = c.t AND c.used <> c.before;

  RETURN QUERY
    SELECT o.f, o.c, o.u, o.s, o.e, floor(extract(epoch FROM clock) * 1000)::bigint
      FROM unnest(op_fits, op_charged, op_used, starts, ends) AS o(f, c, u, s, e);
END
$take$;

-- What a quota used in the window that holds `at` (NULL: now()), and the window; used is 0 when
-- the window has no row yet. For `sluice quota get`.
CREATE OR REPLACE FUNCTION sluice_quota_get_v2(bucket_name text, val bytea, period text,
                                               duration_ms bigint, at timestamptz)
RETURNS TABLE (used bigint, window_start timestamptz, window_end timestamptz)
LANGUAGE sql STABLE AS $get$
  SELECT coalesce((SELECT q.used FROM sluice_quota AS q
                    WHERE q.bucket = bucket_name AND q.value = val AND q.window_start = w.s
                      AND q.window_end = w.e), 0),
         w.s, w.e
    FROM (SELECT sluice_quota_start_v2(period, duration_ms, coalesce(at, now())) AS s,
                 sluice_quota_end_v2(period, duration_ms, coalesce(at, now())) AS e) AS w
$get$;

-- Sets what a quota used in its current window (0: a reset), and tells every gateway listening
-- on the channel sluice_quota to forget what it remembered of the quota (a quota it knew to be
-- spent). For `sluice quota set` and `reset`; the notification goes out at commit.
CREATE OR REPLACE FUNCTION sluice_quota_set_v2(bucket_name text, val bytea, period text,
                                               duration_ms bigint, new_used bigint,
                                               at timestamptz)
RETURNS TABLE (used bigint, window_start timestamptz, window_end timestamptz)
LANGUAGE plpgsql AS $set$
#variable_conflict use_column
DECLARE
  clock constant timestamptz := coalesce(at, now());
  s constant timestamptz := sluice_quota_start_v2(period, duration_ms, clock);
  e constant timestamptz := sluice_quota_end_v2(period, duration_ms, clock);
BEGIN
  INSERT INTO sluice_quota AS q (bucket, value, window_start, window_end, used)
  VALUES (bucket_name, val, s, e, new_used)
  ON CONFLICT (bucket, value, window_start, window_end) DO UPDATE SET used = excluded.used;
  PERFORM pg_notify('sluice_quota', bucket_name || ':' || encode(val, 'hex'));
  RETURN QUERY SELECT new_used, s, e;
END
$set$;

-- Deletes at most `batch` rows whose window ended before `at` (NULL: now()), in one transaction;
-- -1 when another gateway is deleting (it holds the lock), so that one gateway at a time does.
CREATE OR REPLACE FUNCTION sluice_quota_cleanup_v2(batch integer, at timestamptz)
RETURNS integer
LANGUAGE plpgsql AS $cleanup$
DECLARE
  deleted integer;
BEGIN
  IF NOT pg_try_advisory_xact_lock(7239120569427918850) THEN
    RETURN -1;
  END IF;
  DELETE FROM sluice_quota
   WHERE ctid = ANY (ARRAY(SELECT ctid FROM sluice_quota
                            WHERE window_end <= coalesce(at, now())
                            ORDER BY window_end LIMIT batch FOR UPDATE SKIP LOCKED));
  GET DIAGNOSTICS deleted = ROW_COUNT;
  RETURN deleted;
END
$cleanup$;

-- Ended windows are found by their end.
DO $index$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_attribute
              WHERE attrelid = to_regclass('sluice_quota') AND attname = 'window_end'
                AND NOT attisdropped) THEN
    CREATE INDEX IF NOT EXISTS sluice_quota_window_end ON sluice_quota (window_end);
  END IF;
END
$index$;
