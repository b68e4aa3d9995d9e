"""schemathesis hooks for scripts/fuzz.sh: sign health reports the way a cluster's reporter does.

A report (POST /api/clusters/{name}/status) is signed over its exact bytes, which exist only once the
request is prepared, so the signature is added as a `requests` auth callable, the last step before
sending. Only requests that carry the placeholder of the clusterSignature scheme (put there by the auth
config) are signed: the ignored_auth check's copies without credentials stay unsigned and must be refused.
"""

import hashlib
import hmac
import os
import re
import time
from urllib.parse import unquote, urlsplit

import schemathesis

PLACEHOLDER = "fuzz-sign-me"
SIGNATURE = "X-Failover-Signature"
TIMESTAMP = "X-Failover-Timestamp"
REPORT_PATH = re.compile(r"/clusters/([^/]+)/status$")


def sign(request):
    if request.headers.get(SIGNATURE) != PLACEHOLDER:
        return request
    match = REPORT_PATH.search(urlsplit(request.url).path)
    if match is None:
        return request
    cluster = unquote(match.group(1))
    signing_key = os.environ["REPORTER_SIGNING_KEY"].encode()
    cluster_key = hmac.new(signing_key, cluster.encode(), hashlib.sha256).hexdigest().encode()
    timestamp = str(int(time.time()))
    body = request.body or b""
    if isinstance(body, str):
        body = body.encode()
    digest = hmac.new(cluster_key, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    request.headers[TIMESTAMP] = timestamp
    request.headers[SIGNATURE] = f"sha256={digest}"
    return request


@schemathesis.hook
def before_call(context, case, kwargs):
    kwargs["auth"] = sign
