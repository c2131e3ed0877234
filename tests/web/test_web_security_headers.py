"""Every answer carries a Content-Security-Policy: scripts from Berth's own files only."""

from web_helpers import HX


def test_pages_answer_a_content_security_policy_without_inline_scripts(op, make_node):
    make_node("node-a", gpus=2)
    for url in ("/", "/nodes/node-a/", "/preview/", "/reservations/"):
        for kwargs in ({}, HX):
            policy = op.get(url, **kwargs)["Content-Security-Policy"]
            directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
            assert directives["script-src"] == "'self'", url
            assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"


def test_the_api_docs_page_alone_may_start_swagger_ui_inline(op):
    policy = op.get("/api/docs/")["Content-Security-Policy"]
    assert "script-src 'self' 'unsafe-inline'" in policy
    assert "script-src 'self';" in op.get("/api/v1/pools")["Content-Security-Policy"] + ";"
