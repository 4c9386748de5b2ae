"""A newcomer's very first `make run`, from an empty state folder, then Chromium.

Nothing here is the test process's Django: `make run` itself starts its own embedded
PostgreSQL and Redis+FalkorDB (in an empty state folder, on free ports), migrates, seeds
the demo through the real connectors and serves web, a worker per lane and beat. The
browser then signs in on the styled page as the demo reviewer and finds the seeded
queues and a search hit. Stopping it with Ctrl-C (SIGINT) must stop every server it
started.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.worker]

ROOT = Path(__file__).resolve().parents[2]
# Below the checkout, which the PostgreSQL system user can already reach (a folder in
# pytest's private temporary root would need its permissions widened). Emptied first.
STATE = ROOT / ".devservices" / "first-run-test"
LOG = ROOT / "test-artifacts" / "make-run.log"
PASSWORD = "a-long-first-run-password"
STARTUP_SECONDS = 300  # a cold start migrates ~60 migrations and ingests the demo on 2 cores
STOP_SECONDS = 60
# What the test process was given for its own servers must not leak into `make run`.
FOREIGN_PREFIXES = ("DJANGO_", "DATABASE_", "VERA_", "REDIS_", "CELERY_", "OTEL_")


@dataclass(frozen=True)
class Running:
    url: str
    log: Path
    ports: tuple[int, ...]
    env: dict[str, str]
    mcp: str = ""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=5) as response:  # noqa: S310
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _tail(log: Path, lines: int = 60) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _stop(process: subprocess.Popen[bytes]) -> int | None:
    """Ctrl-C, as a developer would; a kill only if it does not stop in time."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGINT)
    try:
        return process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return None


@pytest.fixture(scope="module")
def make_run() -> Iterator[Running]:
    shutil.rmtree(STATE, ignore_errors=True)
    LOG.parent.mkdir(exist_ok=True)
    web, pg, redis, mcp = _free_port(), _free_port(), _free_port(), _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_PREFIXES)}
    env.update(
        VERA_DEV__ROOT=str(STATE),
        VERA_DEV__PG_PORT=str(pg),
        VERA_DEV__REDIS_PORT=str(redis),
        VERA_DEV__WEB_PORT=str(web),
        VERA_DEV__MCP_PORT=str(mcp),
        VERA_DEMO__REVIEWER_PASSWORD=PASSWORD,
        PYTHONUNBUFFERED="1",
    )
    command = ["make", "run"] if shutil.which("make") else ["bin/vera", "run"]
    log = LOG
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{web}"
    deadline = time.monotonic() + STARTUP_SECONDS
    while not _healthy(url):
        if process.poll() is not None:
            pytest.fail(f"`make run` exited with {process.returncode}:\n{_tail(log)}")
        if time.monotonic() > deadline:
            _stop(process)
            pytest.fail(f"`make run` was not healthy after {STARTUP_SECONDS} s:\n{_tail(log)}")
        time.sleep(1)
    running = Running(
        url=url, log=log, ports=(web, pg, redis, mcp), env=env, mcp=f"http://127.0.0.1:{mcp}"
    )
    try:
        yield running
    finally:
        code = _stop(process)
    assert code is not None, f"`make run` ignored Ctrl-C for {STOP_SECONDS} s:\n{_tail(log)}"
    still = [port for port in running.ports if _listening(port)]
    assert not still, f"ports {still} still listen after Ctrl-C:\n{_tail(log)}"
    # A warm stop: every worker finished its task; none was killed under it.
    assert "WorkerLostError" not in log.read_text(errors="replace"), _tail(log)
    shutil.rmtree(STATE, ignore_errors=True)


def _sign_in(page: Page, url: str) -> None:
    page.goto(f"{url}/accounts/login/")
    expect(page.locator("header.topbar .brand")).to_have_text("VERA")
    expect(page.locator("a[href*='signup']")).to_have_count(0)
    page.fill("input[name=login]", "reviewer")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    expect(page.get_by_role("heading", name="Welcome, reviewer")).to_be_visible()


def test_first_make_run_prints_the_address_and_seeds_the_demo(make_run: Running) -> None:
    log = make_run.log.read_text(errors="replace")
    assert f"VERA is starting on {make_run.url}/" in log
    assert "demo user 'reviewer' password: from $VERA_DEMO__REVIEWER_PASSWORD" in log
    # The admin's password was generated and shown once, never a fixed default.
    assert "demo user 'admin' password: " in log
    assert "demo source 'Runbooks'" in log
    # Nothing failed on the way up (a migration's name may say "failed": it is a name).
    setup = log.split("VERA is starting")[0].splitlines()
    assert [line for line in setup if "failed" in line and "Applying " not in line] == []


def test_the_mcp_server_answers_beside_web_on_first_make_run(make_run: Running) -> None:
    deadline = time.monotonic() + 60
    while not _healthy(make_run.mcp):
        assert time.monotonic() < deadline, _tail(make_run.log)
        time.sleep(1)
    metadata = f"{make_run.mcp}/.well-known/oauth-protected-resource/mcp"
    with urllib.request.urlopen(metadata, timeout=5) as response:  # noqa: S310 - loopback
        assert json.loads(response.read())["resource"] == f"{make_run.mcp}/mcp"
    request = urllib.request.Request(f"{make_run.mcp}/mcp", data=b"{}", method="POST")  # noqa: S310 - loopback
    with pytest.raises(urllib.error.HTTPError) as refused:  # no token: 401, never data
        urllib.request.urlopen(request, timeout=5)  # noqa: S310 - loopback
    assert refused.value.code == 401
    assert "resource_metadata=" in refused.value.headers["WWW-Authenticate"]


def test_reviewer_sees_seeded_queues_on_first_make_run(make_run: Running, page: Page) -> None:
    _sign_in(page, make_run.url)
    page.goto(f"{make_run.url}/review/?queue=claims")
    expect(page.locator("#count-claims")).not_to_have_text("0")
    expect(page.locator("#count-proposals")).not_to_have_text("0")
    runs_on = page.locator(".spo code", has_text="RUNS_ON")
    stale = page.locator("tr.item", has_text="vm-pay-01", has=runs_on)
    expect(stale).to_contain_text("payments-api runs on k8s-prod-2.")
    page.goto(f"{make_run.url}/review/?queue=proposals")
    chat = page.locator("tr.item", has_text="k8s-prod-3", has=runs_on)
    expect(chat).to_contain_text("billing-api runs on k8s-prod-1.")


def test_reviewer_finds_a_search_hit_on_first_make_run(make_run: Running, page: Page) -> None:
    _sign_in(page, make_run.url)
    page.goto(f"{make_run.url}/search/")
    page.fill("input[name=q]", "where does payments-api run")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("ol.hits")).to_contain_text("payments-api runs on k8s-prod-2.")


def test_a_plain_question_is_answered_first_in_the_portal_on_first_make_run(
    make_run: Running, page: Page
) -> None:
    _sign_in(page, make_run.url)
    page.goto(f"{make_run.url}/search/")
    page.fill("input[name=q]", "what does billing-api run on")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("ol.hits > li").first).to_contain_text("billing-api runs on k8s-prod-1.")
    expect(page.locator("#understood")).to_contain_text("billing-api")
    expect(page.locator("#understood")).to_contain_text("RUNS_ON")


def test_approval_reaches_search_through_the_running_workers(make_run: Running, page: Page) -> None:
    """The demo's workers are live: an approval is projected into the index by them."""
    fact = "the ledger-db is hosted in eu-west-1."
    _sign_in(page, make_run.url)
    page.goto(f"{make_run.url}/search/?q=where+is+ledger-db+hosted")
    expect(page.locator("ol.hits")).not_to_contain_text(fact)
    page.goto(f"{make_run.url}/review/?queue=claims")
    hosted_in = page.locator(".spo code", has_text="HOSTED_IN")
    item = page.locator("tr.item", has_text="eu-west-1", has=hosted_in).get_attribute("id")
    row = page.locator(f"tr#{item}")
    row.get_by_role("button", name="Approve", exact=True).click()
    expect(row).to_contain_text(f"Published #{str(item).removeprefix('item-')}.")
    # Nothing in this test process indexes: only the running `make run` workers can.
    deadline = time.monotonic() + 30
    while True:
        page.goto(f"{make_run.url}/search/?q=where+is+ledger-db+hosted")
        if fact in (page.locator("main").text_content() or ""):
            break
        assert time.monotonic() < deadline, "the approval never reached the search index"
        time.sleep(1)
    expect(page.locator("ol.hits")).to_contain_text(fact)


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {key: value for key, _, value in pairs}


def _served_processes() -> dict[str, dict[str, str]]:
    """The environment of each web, worker and beat process this `make run` started."""
    found: dict[str, dict[str, str]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            env = _environ(int(proc.name))
        except OSError:
            continue  # gone, or not ours to read
        if env.get("VERA_DEV__ROOT") != str(STATE):
            continue
        for role in ("runserver", "worker", "beat"):
            if role in cmdline.split() and "python" in cmdline:
                found[f"{role} {proc.name}"] = env
    return found


def test_served_processes_hold_no_owner_credentials_and_share_one_object_store(
    make_run: Running,
) -> None:
    served = _served_processes()
    roles = {name.split()[0] for name in served}
    assert roles == {"runserver", "worker", "beat"}, sorted(served)
    assert not [name for name, env in served.items() if "DATABASE_OWNER_URL" in env]
    stores = {env.get("VERA_OBJECT_STORE__ROOT") for env in served.values()}
    assert stores == {str(STATE / "dev" / "objects")}
    # A developer's shell gets the same store from --print-env, for `manage.py ingest`.
    printed = subprocess.run(
        ["bin/vera", "services", "start", "--print-env"], cwd=ROOT, env=make_run.env,
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert f"export VERA_OBJECT_STORE__ROOT={STATE / 'dev' / 'objects'}" in printed
