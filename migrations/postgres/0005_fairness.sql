-- Fairness between organisations in the queue: the claim counts an organisation's running
-- jobs of a kind, serves organisations with nothing running first, and skips one at its
-- cap (scans: BRAINSCAN_ORG_RUNNING_SCANS; webhooks: one delivery at a time per organisation).
ALTER TABLE jobs ADD COLUMN org_id TEXT;
UPDATE jobs SET org_id = payload::json->>'org_id' WHERE kind = 'webhook';
UPDATE jobs j SET org_id = s.org_id FROM scans s WHERE j.kind = 'scan' AND s.id = j.payload::json->>'scan_id';
CREATE INDEX jobs_org_running ON jobs (org_id, kind, locked_until) WHERE state = 'running';
