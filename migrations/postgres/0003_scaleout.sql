-- Scale-out support (several processes on one database).

-- The claim query only looks at runnable jobs; a partial index keeps it fast however many
-- finished jobs accumulate (measured in `cargo bench -p brainscan --bench queue`).
CREATE INDEX jobs_runnable ON jobs (kind, run_after, created_at) WHERE state IN ('queued', 'running');

-- Secrets every process sharing the database must agree on, generated once by whichever
-- process starts first (e.g. the key that signs local artifact URLs).
CREATE TABLE service_secrets (
    name        TEXT PRIMARY KEY,
    value       TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
