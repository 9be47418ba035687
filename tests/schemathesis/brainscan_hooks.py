"""Schemathesis hooks for scripts/api-fuzz.

Every `format: uri` string the generator makes is the loopback URL of a real clip
(BRAINSCAN_ST_MEDIA_URL), served by the fuzz stage itself, so a schema-valid scan request
can be accepted end to end. The server runs with BRAINSCAN_ALLOW_LOOPBACK_FETCH=true, and no
traffic leaves the machine.

Some phases also build URLs from the document's `pattern` (host/src/url_syntax.rs), and those
name hosts that do not exist. A schema says what a URL looks like, not whether its host
resolves, serves media, or has an address the SSRF policy allows. So one kind of
positive_data_acceptance failure is set aside, and only that kind: a schema-valid request
answered with the error codes that mean exactly this (422 `download_failed`,
`unsupported_media`; 400 `url_not_allowed`). A schema-valid URL the server calls malformed
(400 `invalid_request`) is still a failure: that is the disagreement the check exists for.
The address policy itself is tested in tests/e2e/ssrf.rs.
"""
import os

import schemathesis
from hypothesis import strategies as st

schemathesis.openapi.format("uri", st.just(os.environ["BRAINSCAN_ST_MEDIA_URL"]))

# Error codes that say the URL is well formed but its host cannot serve this scan.
UNREACHABLE = {"download_failed", "unsupported_media", "url_not_allowed"}


@schemathesis.hook
def filter_failure(ctx, failure, case, response):
    if "positive_data_acceptance" not in getattr(failure, "checks", ()):
        return True
    try:
        code = response.json().get("error")
    except Exception:
        return True
    return code not in UNREACHABLE
