-- PostgreSQL dialect of sqlite/0002: identical but for BYTEA in place of BLOB.
-- The plugin registry. Component bytes are stored content-addressed in the database, so every
-- process that shares the database (API and worker roles) can load any installed version.
CREATE TABLE plugin_blobs (
    digest TEXT PRIMARY KEY,            -- sha256:<hex> of bytes
    bytes BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE plugins (
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    kind TEXT NOT NULL,                 -- lens | moments | manipulation
    digest TEXT NOT NULL REFERENCES plugin_blobs (digest),
    manifest TEXT NOT NULL,             -- JSON Manifest
    conformance TEXT,                   -- JSON report of the upload's conformance run
    installed_at BIGINT NOT NULL,
    PRIMARY KEY (name, version)
);

-- One row per slot: `moments`, `manipulation`, and `lens:<plugin name>` for each active lens
-- plugin. history is a JSON array of earlier `name@version` ids, most recent last.
CREATE TABLE plugin_slots (
    slot TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    history TEXT NOT NULL DEFAULT '[]',
    auto BIGINT NOT NULL DEFAULT 0,     -- 1 when the host activated a built-in default
    updated_at BIGINT NOT NULL
);

-- Bumped with every slot change; processes compare it to decide whether to reload.
CREATE TABLE plugin_generation (
    id BIGINT PRIMARY KEY,
    generation BIGINT NOT NULL
);
INSERT INTO plugin_generation (id, generation) VALUES (1, 0);

CREATE TABLE plugin_events (
    id TEXT PRIMARY KEY,
    slot TEXT NOT NULL,
    action TEXT NOT NULL,               -- activate | rollback | breaker | deactivate
    from_id TEXT,
    to_id TEXT,
    reason TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX plugin_events_at ON plugin_events (at);
