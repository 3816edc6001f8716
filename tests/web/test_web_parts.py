"""The service layer's parts (:mod:`ldp.web`) by themselves: the ``Authorization`` parser (properties: a token is
taken only when it is the token; the scheme in any case; only OWS dropped), the secret-file rule, the config loader,
the problem document, and who imports the layer (the services only, and it no HTTP stack where it says so)."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st
from structure.import_graph import Graph

from ldp.errors import ConfigError
from ldp.web import config as loader
from ldp.web.auth import OWS, bearer_token, holder_of, holds, token_digest
from ldp.web.secret_files import MAX_SECRET_BYTES, create_secret, read_secret, write_secret

# -- the Authorization parser ----------------------------------------------------------------------------------------

TOKENS = st.text(min_size=1, max_size=60).filter(lambda t: t == t.strip(OWS))
"""A token as a client sends it: anything, without OWS at its ends."""
SCHEMES = st.tuples(*[st.sampled_from([c, c.upper()]) for c in "bearer"]).map("".join)
"""``bearer`` in every mix of cases."""
BLANKS = st.text(" \t", max_size=4)
SEPARATORS = "\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2028\u3000"
"""What ``str.strip`` drops and HTTP does not (RFC 9110 §5.6.3: OWS is space and tab)."""


def sha(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


@given(SCHEMES, st.integers(1, 4), TOKENS, BLANKS, BLANKS)
def test_any_case_of_the_scheme_parses(scheme: str, spaces: int, token: str, before: str, after: str) -> None:
    """RFC 9110 §11.1: the scheme is case-insensitive; one or more spaces after it; OWS around the token dropped."""
    header = f"{scheme}{' ' * spaces}{before}{token}{after}"
    assert bearer_token(header) == token
    assert holds(header, [sha(token)])


@given(st.text(max_size=80), TOKENS)
def test_never_accepts_another_token(header: str, token: str) -> None:
    """Whatever the header, it is accepted for ``token`` exactly when the token it bears is ``token``."""
    got = bearer_token(header)
    assert holds(header, [sha(token)]) == (got == token)
    if got is not None:
        assert got == got.strip(OWS) and got and header[:6].lower() == "bearer" and header[6] == " "


@given(TOKENS, st.sampled_from(SEPARATORS), st.booleans())
def test_separators_are_not_blanks(token: str, separator: str, before: bool) -> None:
    """Only space and tab are dropped: a token with another separator at an end is another token."""
    header = f"Bearer {separator}{token}" if before else f"Bearer {token}{separator}"
    assert bearer_token(header) != token and not holds(header, [sha(token)])


@given(st.text(max_size=10).filter(lambda s: s.lower() != "bearer"), TOKENS)
def test_other_schemes_are_refused(scheme: str, token: str) -> None:
    assert bearer_token(f"{scheme} {token}") is None


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer ", "Bearer \t ", "Bearer\ttoken", "Bearertoken",
                                    " Bearer token", "Basic token", "Bearer\u212a token"])
def test_no_token(header: str | None) -> None:
    assert bearer_token(header) is None


def test_holder_compares_every_one() -> None:
    """The holder of a digest, compared with every holder (the last match kept), ``None`` for none."""
    holders = [(token_digest("a"), 1), (token_digest("b"), 2)]
    assert holder_of(token_digest("b"), holders) == 2 and holder_of(token_digest("c"), holders) is None
    assert holder_of(None, holders) is None and not holds("Bearer a", [None])


# -- the secret-file rule --------------------------------------------------------------------------------------------

def test_a_secret_file_is_made_whole_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "token"
    write_secret(path, "  tok\u00e9n \t\r\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and sorted(p.name for p in path.parent.iterdir()) == ["token"]
    assert read_secret(path, "peer.token_file") == "tok\u00e9n"
    with pytest.raises(FileExistsError):
        create_secret(path, b"other")
    assert read_secret(path, "x") == "tok\u00e9n"


def test_only_blanks_and_line_breaks_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "token"
    write_secret(path, "token\x1c\n")
    assert read_secret(path, "x") == "token\x1c"


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o610, 0o644])
def test_a_secret_readable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "token"
    write_secret(path, "t")
    os.chmod(path, mode)
    with pytest.raises(ConfigError, match=r"peer.token_file: .* readable by others .*chmod 600"):
        read_secret(path, "peer.token_file")


def test_a_secret_must_be_a_small_regular_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a regular file"):
        read_secret(tmp_path, "hpke_key")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(ConfigError, match="not a regular file"):  # never blocks on the FIFO
        read_secret(fifo, "hpke_key")
    with pytest.raises(ConfigError, match="cannot read"):
        read_secret(tmp_path / "missing", "hpke_key")
    big = tmp_path / "big"
    create_secret(big, b"x" * (MAX_SECRET_BYTES + 1))
    with pytest.raises(ConfigError, match="more than a secret file holds"):
        read_secret(big, "hpke_key")
    link = tmp_path / "link"
    small = tmp_path / "small"
    write_secret(small, "s")
    link.symlink_to(small)
    assert read_secret(link, "x") == "s"  # a mounted secret is often a link


# -- the config loader -----------------------------------------------------------------------------------------------

def test_the_loader_refuses_unknown_keys_and_names_misplaced_ones(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text('role = "leader"\n[peer]\nurl = "http://h"\nstore = "x"\n')
    doc = loader.read_toml(tmp_path / "c.toml")
    peer = doc["peer"]
    with pytest.raises(ConfigError, match=r"peer: unknown key\(s\) 'store'.*'store' belong\(s\) at the top"):
        loader.table("peer", peer, {"url"}, plain={"store"})
    with pytest.raises(ConfigError, match="not valid TOML"):
        (tmp_path / "bad.toml").write_text("= 1")
        loader.read_toml(tmp_path / "bad.toml")
    with pytest.raises(ConfigError, match="cannot read the config file"):
        loader.read_toml(tmp_path / "none.toml")


@pytest.mark.parametrize(("value", "ok"), [("a" * 64, True), ("A" * 64, False), ("a" * 63, False), (1, False)])
def test_the_loader_checks_token_hashes(value: object, ok: bool) -> None:
    if ok:
        assert loader.token_hash("x.token_sha256", value) == value
    else:
        with pytest.raises(ConfigError, match=r"x.token_sha256 must be the 64 lowercase hex digits .*ldp serve token"):
            loader.token_hash("x.token_sha256", value)


@pytest.mark.parametrize("value", [True, "1", 0, 11, float("nan"), float("inf")])
def test_the_loader_checks_numbers(value: object) -> None:
    with pytest.raises(ConfigError, match="job_size must be"):
        loader.number("job_size", value, int, 1, high=10)


def _aggregator_files(tmp_path: Path, peer: str = "") -> Path:
    if not (tmp_path / "helper.token").exists():
        write_secret(tmp_path / "helper.token", "tok\n")
    (tmp_path / "leader.toml").write_text(
        f'role = "leader"\nstore = "store"\nhpke_key = "k.json"\n[peer]\nurl = "http://helper"\n'
        f'token_file = "helper.token"\n{peer}[collector]\ntoken_sha256 = "{"b" * 64}"\n'
        '[[tasks]]\nfile = "t.json"\nverify_key_file = "t.verify"\n')
    return tmp_path / "leader.toml"


def test_the_aggregator_config_is_read_by_the_loader(tmp_path: Path) -> None:
    """The aggregators' config on the layer: unknown keys refused (here one misplaced after ``[peer]``), the token
    file under the secret-file rule."""
    from ldp.aggregators.config import load_config

    with pytest.raises(ConfigError, match=r"peer: unknown key\(s\) 'job_size'.*belong\(s\) at the top"):
        load_config(_aggregator_files(tmp_path, peer="job_size = 10\n"))
    os.chmod(tmp_path / "helper.token", 0o644)
    with pytest.raises(ConfigError, match="peer.token_file: .* readable by others"):
        load_config(_aggregator_files(tmp_path), "leader")


# -- the document and the imports ------------------------------------------------------------------------------------

def test_the_problem_document() -> None:
    from ldp.web.problems import problem_document

    assert problem_document(413, "too_large", "the body is over 4 bytes") == {
        "error": "too_large", "detail": "the body is over 4 bytes", "type": "about:blank",
        "title": "Content Too Large", "status": 413, "code": "too_large"}
    dap = problem_document(409, "report_replayed", "seen")
    assert dap["type"] == "about:blank"
    dap = problem_document(409, "report_replayed", "seen", dap=True)
    assert dap["type"] == "urn:ietf:params:ppm:dap:error:reportRejected" and dap["title"] == "Report replayed"
    assert dap["code"] == "report_replayed"  # this project's code kept beside DAP-09's type
    own = problem_document(409, "jobs_set_aside", "put them back", dap=True)  # no DAP-09 type fits
    assert own["type"] == "about:blank" and own["title"] == "Conflict"


def test_every_dap_09_problem_type_and_back() -> None:
    """DAP-09 §3.2's types (Table 1, its taskprov type aside), each reached from a code of ours and read back."""
    from ldp.web.problems import DAP_CODES, DAP_TYPES, code_of

    table = {"invalidMessage", "unrecognizedTask", "stepMismatch", "missingTaskID", "unrecognizedAggregationJob",
             "outdatedConfig", "reportRejected", "reportTooEarly", "batchInvalid", "invalidBatchSize",
             "batchQueriedTooManyTimes", "batchMismatch", "unauthorizedRequest", "batchOverlap"}
    assert set(DAP_TYPES.values()) == table == set(DAP_CODES)
    for kind, code in DAP_CODES.items():
        assert code_of({"type": "urn:ietf:params:ppm:dap:error:" + kind}) == code
        assert DAP_TYPES.get(code, kind) == kind or code == "report_rejected"
    assert code_of({"type": "about:blank"}) is None and code_of({"code": "x", "type": "about:blank"}) == "x"


def test_an_unexpected_error_is_a_problem_document() -> None:
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from ldp.web.app import service_app

    def boom(request: object) -> None:
        raise ValueError("do-not-show-me")

    with TestClient(service_app([Route("/", boom)]), raise_server_exceptions=False) as c:
        r = c.get("/")
    assert r.status_code == 500 and r.headers["content-type"] == "application/problem+json"
    assert r.json()["code"] == "internal" and "do-not-show-me" not in r.text


def test_the_layer_is_imported_by_the_services_only() -> None:
    """ldp.web is the services' layer: only ldp.ingest and ldp.aggregators (and itself) import it."""
    graph = Graph.build()
    importers = {imp.source for imp in graph.imports if imp.target == "ldp.web" or imp.target.startswith("ldp.web.")}
    outside = sorted(m for m in importers if not m.startswith(("ldp.web", "ldp.ingest.", "ldp.aggregators.")))
    assert not outside, outside


def test_the_parts_that_say_so_import_no_http_stack() -> None:
    code = ("import sys; import ldp.web, ldp.web.auth, ldp.web.problems, ldp.web.config, ldp.web.secret_files, "
            "ldp.web.pages, ldp.aggregators.http; sys.exit(1 if 'starlette' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_the_aggregators_take_a_dap_auth_token_header_too() -> None:
    """DAP implementations (Janus, its interoperation test design) send ``DAP-Auth-Token: <token>``; the aggregators
    take it where no ``Authorization`` header is sent (one with another scheme or token is not overridden)."""
    from ldp.web.auth import holds, token_digest

    want = token_digest("s3cret").hex()
    assert holds(None, [want], "s3cret") and holds(None, [want], " s3cret\t")
    assert not holds(None, [want], "other") and not holds(None, [want], "") and not holds(None, [want], None)
    assert not holds("Bearer other", [want], "s3cret") and not holds("Basic eA==", [want], "s3cret")
    assert holds("Bearer s3cret", [want], "other")
    assert not holds(None, [None], "s3cret")  # a role with no token: nobody holds it
