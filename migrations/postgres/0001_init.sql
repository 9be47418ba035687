-- brainscan schema v1 (PostgreSQL dialect). Times are Unix milliseconds (BIGINT), money is integer
-- US cents, JSON documents are TEXT. The same statements as sqlite/0001 (the portable subset);
-- only the header differs.

CREATE TABLE orgs (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE,
    webhook_secret  TEXT NOT NULL,
    created_at      BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,          -- the lookup prefix, also shown in listings
    org_id      TEXT NOT NULL REFERENCES orgs(id),
    key_hash    TEXT NOT NULL,             -- hex SHA-256 of the whole key; the secret is never stored
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);

-- One wallet per organisation. free_period is the UTC month (YYYY-MM) free_used_cents belongs
-- to; a charge in a later month resets it first. lock_version is bumped by every writer so a
-- transaction's first statement takes the write lock (SQLite) or the row lock (PostgreSQL).
CREATE TABLE wallets (
    org_id           TEXT PRIMARY KEY REFERENCES orgs(id),
    deposit_cents    BIGINT NOT NULL DEFAULT 0,
    free_period      TEXT NOT NULL,
    free_used_cents  BIGINT NOT NULL DEFAULT 0,
    lock_version     BIGINT NOT NULL DEFAULT 0
);

-- Every movement of money, for audit: deposits (positive) and scan charges (negative).
CREATE TABLE ledger (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES orgs(id),
    scan_id       TEXT UNIQUE,             -- at most one charge per scan
    kind          TEXT NOT NULL,           -- 'deposit' | 'scan_charge'
    free_cents    BIGINT NOT NULL,
    deposit_cents BIGINT NOT NULL,
    note          TEXT,
    created_at    BIGINT NOT NULL
);

CREATE TABLE scans (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES orgs(id),
    status        TEXT NOT NULL,           -- queued | processing | complete | error | cancelled
    stage         TEXT NOT NULL,
    progress      BIGINT NOT NULL DEFAULT 0,
    model         TEXT NOT NULL,
    input_kind    TEXT NOT NULL,
    input_url     TEXT NOT NULL,
    request_json  TEXT NOT NULL,           -- normalised request: lenses, options, webhook
    result_json   TEXT,                    -- full result; options decide what GET shows
    error         TEXT,
    price_cents   BIGINT NOT NULL,
    charged_at    BIGINT,                  -- set exactly once, by the first fetch of a complete scan
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    completed_at  BIGINT
);
CREATE INDEX scans_org_created ON scans (org_id, created_at DESC, id DESC);
CREATE INDEX scans_org_status ON scans (org_id, status);

CREATE TABLE jobs (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL,           -- 'scan' | 'webhook'
    payload       TEXT NOT NULL,
    state         TEXT NOT NULL,           -- queued | running | done | failed
    attempts      BIGINT NOT NULL DEFAULT 0,
    max_attempts  BIGINT NOT NULL,
    run_after     BIGINT NOT NULL,
    locked_by     TEXT,
    locked_until  BIGINT,
    last_error    TEXT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX jobs_claim ON jobs (kind, state, run_after);

CREATE TABLE idempotency_keys (
    org_id      TEXT NOT NULL REFERENCES orgs(id),
    idem_key    TEXT NOT NULL,
    body_hash   TEXT NOT NULL,
    scan_id     TEXT NOT NULL,
    response    TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, idem_key)
);

CREATE TABLE webhook_deliveries (
    id           TEXT PRIMARY KEY,
    scan_id      TEXT NOT NULL,
    org_id       TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    url          TEXT NOT NULL,
    attempt      BIGINT NOT NULL,
    status_code  BIGINT,
    error        TEXT,
    created_at   BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_scan ON webhook_deliveries (scan_id);

-- The organisation's long-term memory: one row per completed scan, written by its first fetch.
CREATE TABLE memory_scans (
    scan_id      TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs(id),
    result_json  TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX memory_scans_org ON memory_scans (org_id, created_at);
