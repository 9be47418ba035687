-- Semantic recall. Each completed scan's searchable texts (moment reasons, the summary,
-- transcript lines) are embedded by the worker and kept with the scan; when the scan enters
-- the organisation's memory (its first fetch) they are copied into recall_texts in the same
-- transaction. The vector is little-endian f32, L2-normalised, and model_id names the
-- embedding model: vectors of another model are never compared with a query.

CREATE TABLE scan_texts (
    scan_id     TEXT NOT NULL,
    ord         BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    lens        TEXT NOT NULL,
    second      BIGINT NOT NULL,
    text        TEXT NOT NULL,
    model_id    TEXT NOT NULL,
    vector      BLOB NOT NULL,
    PRIMARY KEY (scan_id, ord)
);

-- id only grows, so a process's in-memory index of an organisation reads only newer rows.
CREATE TABLE recall_texts (
    id          INTEGER PRIMARY KEY,
    org_id      TEXT NOT NULL,
    scan_id     TEXT NOT NULL,
    kind        TEXT NOT NULL,
    lens        TEXT NOT NULL,
    second      BIGINT NOT NULL,
    text        TEXT NOT NULL,
    model_id    TEXT NOT NULL,
    vector      BLOB NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX recall_texts_org ON recall_texts (org_id, model_id, id);
