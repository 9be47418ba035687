-- The list reads each scan's summary from its own column, so GET /scans?limit=100 does not
-- load and parse a hundred full results (each tens of kilobytes).
ALTER TABLE scans ADD COLUMN summary TEXT;
UPDATE scans SET summary = result_json::json->>'summary' WHERE result_json IS NOT NULL;
