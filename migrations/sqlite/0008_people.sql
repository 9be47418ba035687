-- People in the console (issue 44): accounts that sign in with a password (argon2id) or a
-- one-time link the operator's CLI prints, their organisations, sessions, and each
-- organisation's dashboard plan. API keys keep working exactly as before.

-- free | pro | studio: the monthly allowance of scans started from the console.
ALTER TABLE orgs ADD COLUMN plan TEXT NOT NULL DEFAULT 'free';

-- api: started with an API key, billed from the wallet. console: started by a signed-in
-- person, counted against the plan's allowance and never charged (price_cents is 0).
ALTER TABLE scans ADD COLUMN source TEXT NOT NULL DEFAULT 'api';
ALTER TABLE scans ADD COLUMN person_id TEXT;
CREATE INDEX scans_org_source_created ON scans (org_id, source, created_at);

-- A label its owner gives a key in the console, and who made it there (NULL: the CLI).
ALTER TABLE api_keys ADD COLUMN name TEXT;
ALTER TABLE api_keys ADD COLUMN created_by TEXT;

CREATE TABLE people (
    id             TEXT PRIMARY KEY,
    email          TEXT NOT NULL UNIQUE,   -- trimmed and lower-cased
    password_hash  TEXT,                   -- PHC string (argon2id); NULL: link sign-in only
    created_at     BIGINT NOT NULL
);

CREATE TABLE memberships (
    person_id   TEXT NOT NULL REFERENCES people(id),
    org_id      TEXT NOT NULL REFERENCES orgs(id),
    role        TEXT NOT NULL,             -- owner | member
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (person_id, org_id)
);
CREATE INDEX memberships_org ON memberships (org_id);

-- The cookie holds a random token; only its SHA-256 is stored, as for API keys.
CREATE TABLE sessions (
    token_hash  TEXT PRIMARY KEY,
    person_id   TEXT NOT NULL REFERENCES people(id),
    csrf_token  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX sessions_person ON sessions (person_id);

-- One-time sign-in links: the SHA-256 of the token, used at most once, short-lived.
CREATE TABLE signin_links (
    token_hash  TEXT PRIMARY KEY,
    person_id   TEXT NOT NULL REFERENCES people(id),
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    used_at     BIGINT
);
