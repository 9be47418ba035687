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
SELECT m.org_id, m.scan_id, l.lens, (t.v->>'second')::BIGINT,
       (t.v->'scores'->>l.lens)::DOUBLE PRECISION
FROM memory_scans m
CROSS JOIN LATERAL jsonb_array_elements_text(m.result_json::jsonb->'lenses') AS l(lens)
CROSS JOIN LATERAL jsonb_array_elements(m.result_json::jsonb->'timeline') AS t(v)
WHERE (t.v->'scores'->>l.lens) IS NOT NULL;

INSERT INTO memory_drops (org_id, scan_id, lens, second)
SELECT m.org_id, m.scan_id, mo.v->>'lens', (mo.v->>'second')::BIGINT
FROM memory_scans m
CROSS JOIN LATERAL jsonb_array_elements(m.result_json::jsonb->'moments') AS mo(v)
WHERE right(mo.v->>'type', 5) = '_drop'
ON CONFLICT DO NOTHING;
