-- Fairness between organisations in the queue: the claim counts an organisation's running
-- jobs of a kind, serves organisations with nothing running first, and skips one at its
-- cap (scans: BRAINSCAN_ORG_RUNNING_SCANS; webhooks: one delivery at a time per organisation).
ALTER TABLE jobs ADD COLUMN org_id TEXT;
UPDATE jobs SET org_id = json_extract(payload, '$.org_id') WHERE kind = 'webhook';
UPDATE jobs SET org_id = (SELECT s.org_id FROM scans s WHERE s.id = json_extract(jobs.payload, '$.scan_id')) WHERE kind = 'scan';
CREATE INDEX jobs_org_running ON jobs (org_id, kind, locked_until) WHERE state = 'running';
