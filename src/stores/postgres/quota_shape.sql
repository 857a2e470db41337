-- What is wrong with the quota table, one line for people; 'missing' when the table or a
-- function is not there yet (the schema script creates them), 'outdated' when the table has the
-- first schema's key (the schema script gives it the new one); NULL when all is well. It reads
-- only the catalog, so that a role without CREATE can run it. Run as one transaction (the simple
-- query protocol); its result is the last statement's.
-- First it waits for a schema script that another connection is running (the script holds this
-- lock): to_regclass and to_regprocedure read the latest catalog, the scans below the statement's
-- snapshot, and a snapshot taken while that script commits would see its table without columns
-- or its functions beside the old key.
SELECT pg_advisory_xact_lock_shared(7239120569427918849);
SELECT CASE
  WHEN to_regclass('sluice_quota') IS NULL THEN 'missing'
  WHEN columns IS DISTINCT FROM 'bucket text, value bytea, window_start timestamp with time zone, '
                                'window_end timestamp with time zone, used bigint'
    THEN 'the table sluice_quota has the columns (' || coalesce(columns, '') || '); Sluice needs '
         '(bucket text, value bytea, window_start timestamptz, window_end timestamptz, '
         'used bigint): drop or rename it, or point quota_store at another database'
  WHEN to_regprocedure('sluice_quota_take_v2(integer[], text[], bytea[], bigint[], bigint[], '
                       'text[], bigint[], boolean[], timestamptz)') IS NULL
    OR to_regprocedure('sluice_quota_cleanup_v2(integer, timestamptz)') IS NULL
    OR to_regprocedure('sluice_quota_set_v2(text, bytea, text, bigint, bigint, timestamptz)')
       IS NULL
    OR to_regprocedure('sluice_quota_get_v2(text, bytea, text, bigint, timestamptz)') IS NULL
    THEN 'missing'
  WHEN primary_key = ARRAY['bucket', 'value', 'window_start'] THEN 'outdated'
  WHEN NOT EXISTS (
      SELECT 1 FROM pg_index AS i
       WHERE i.indrelid = to_regclass('sluice_quota') AND i.indisunique AND i.indnatts = 4
         AND (SELECT array_agg(a.attname::text ORDER BY k.ord)
                FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
                JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum)
             = ARRAY['bucket', 'value', 'window_start', 'window_end'])
    THEN 'the table sluice_quota has no primary key (or unique index) on (bucket, value, '
         'window_start, window_end): run `sluice quota init` as its owner, drop it, or point '
         'quota_store at another database'
  END
FROM (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', '
                        ORDER BY a.attnum) AS columns,
             (SELECT array_agg(pa.attname::text ORDER BY k.ord)
                FROM pg_constraint AS c
               CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
                JOIN pg_attribute AS pa ON pa.attrelid = c.conrelid AND pa.attnum = k.attnum
               WHERE c.conrelid = to_regclass('sluice_quota') AND c.contype = 'p') AS primary_key
        FROM pg_attribute AS a
       WHERE a.attrelid = to_regclass('sluice_quota') AND a.attnum > 0
         AND NOT a.attisdropped) AS t
