-- Security round 4: work that ends without a result is counted, whoever ended it.

-- The status a cancelled scan was in when it was cancelled: 'queued' (no work done: free and
-- uncounted) or 'processing' (a worker had begun: counted against the organisation's
-- failed-work budget and, for a console scan, its plan allowance). NULL for other scans.
ALTER TABLE scans ADD COLUMN cancelled_from TEXT;

-- Submissions refused after the service read the URL (a page without media, a file that does
-- not decode, a clip too long, a host that fails): counted against the failed-work budget
-- with failed scans, since each cost a fetch and a probe. Rows older than the budget's
-- window are deleted as new ones arrive.
CREATE TABLE refused_submits (
    org_id      TEXT NOT NULL REFERENCES orgs(id),
    code        TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX refused_submits_org_created ON refused_submits (org_id, created_at);
