-- GET /intelligence aggregates in SQL over each remembered scan's per-second lens scores and
-- drop moments, copied out of the result when the scan enters the organisation's memory (in
-- the same transaction), instead of loading and parsing every remembered result per request.
-- Memory is append-only, so the rows never need to be updated.
CREATE TABLE memory_lens_seconds (
    org_id   TEXT NOT NULL,
    scan_id  TEXT NOT NULL,
    lens     TEXT NOT NULL,
    second   BIGINT NOT NULL,
    score    DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (scan_id, lens, second)
);
CREATE INDEX memory_lens_seconds_org ON memory_lens_seconds (org_id, lens, second);

-- One row per (scan, lens, second) with a drop moment: a scan counts once per pair.
CREATE TABLE memory_drops (
    org_id   TEXT NOT NULL,
    scan_id  TEXT NOT NULL,
    lens     TEXT NOT NULL,
    second   BIGINT NOT NULL,
    PRIMARY KEY (scan_id, lens, second)
);
CREATE INDEX memory_drops_org ON memory_drops (org_id);

-- The scans already remembered.
INSERT INTO memory_lens_seconds (org_id, scan_id, lens, second, score)
SELECT m.org_id, m.scan_id, l.value, CAST(json_extract(t.value, '$.second') AS INTEGER),
       json_extract(t.value, '$.scores."' || l.value || '"')
FROM memory_scans m, json_each(m.result_json, '$.lenses') l, json_each(m.result_json, '$.timeline') t
WHERE json_extract(t.value, '$.scores."' || l.value || '"') IS NOT NULL;

INSERT OR IGNORE INTO memory_drops (org_id, scan_id, lens, second)
SELECT m.org_id, m.scan_id, json_extract(mo.value, '$.lens'), CAST(json_extract(mo.value, '$.second') AS INTEGER)
FROM memory_scans m, json_each(m.result_json, '$.moments') mo
WHERE substr(json_extract(mo.value, '$.type'), -5) = '_drop';
