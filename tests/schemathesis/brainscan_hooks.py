"""Schemathesis hooks for scripts/api-fuzz.

Every `format: uri` string the generator makes is the loopback URL of a real clip
(BRAINSCAN_ST_MEDIA_URL), served by the fuzz stage itself. Why: a schema can say what a URL
looks like, not whether its host resolves, and the service probes the clip at submit, so a
random host is rightly refused (422 download_failed). With a real clip, a schema-valid scan
request must be accepted, and schemathesis's positive_data_acceptance check can hold the
service to that. The server runs with BRAINSCAN_ALLOW_LOOPBACK_FETCH=true, and no traffic
leaves the machine.
"""
import os

import schemathesis
from hypothesis import strategies as st

schemathesis.openapi.format("uri", st.just(os.environ["BRAINSCAN_ST_MEDIA_URL"]))
