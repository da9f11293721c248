"""The documentation site in a real browser: built with ``mkdocs build --strict``, served over http, driven by
headless Chromium. Navigation, the generated tables, the API reference and the search must work as a reader uses
them. Screenshots go to ``$LIT_RL_SCREENSHOTS`` (default: the test's tmp folder)."""

from __future__ import annotations

import functools
import http.server
import inspect
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lit_rl import CrossQ

# The docs toolchain and selenium are not among the package's dependencies: without them the module skips.
for _module in ("mkdocs", "mkdocstrings", "material"):
    pytest.importorskip(_module, reason=f"the docs build needs {_module}")
webdriver = pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

# One worker runs the whole module under `-n auto --dist loadgroup`: one site build and one browser, not one per worker.
pytestmark = pytest.mark.xdist_group("browser")

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WAIT_S = 20
SECTIONS = ["Guides", "Algorithms", "Results", "API reference"]

if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
    pytest.skip(
        f"needs {CHROMIUM} and {CHROMEDRIVER}; install them with `bash scripts/browser.sh install`",
        allow_module_level=True,
    )


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # the test output stays free of access lines
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The built site served on 127.0.0.1 (search loads its index with fetch, which file:// refuses); its URL."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{build.stdout}\n{build.stderr}"
    handler = functools.partial(_QuietHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """Headless Chromium at 1280x900, offline: the driver is given by path, so Selenium Manager fetches nothing."""
    previous = os.environ.get("SE_OFFLINE")
    os.environ["SE_OFFLINE"] = "true"
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
        "--window-size=1280,900",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        driver.set_window_size(1280, 900)
        driver.set_page_load_timeout(WAIT_S)
        yield driver
    finally:
        driver.quit()
        if previous is None:
            os.environ.pop("SE_OFFLINE", None)
        else:
            os.environ["SE_OFFLINE"] = previous


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = os.environ.get("LIT_RL_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def wait(driver: WebDriver) -> WebDriverWait:
    return WebDriverWait(driver, WAIT_S)


def shoot(driver: WebDriver, folder: Path, name: str) -> None:
    path = folder / f"{name}.png"
    assert driver.save_screenshot(str(path)), f"no screenshot written to {path}"
    assert path.stat().st_size > 10_000, f"{path} is suspiciously small ({path.stat().st_size} bytes)"


def test_home_page_renders_with_navigation(site: str, browser: WebDriver, screenshots: Path) -> None:
    browser.get(site)
    h1 = wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, "article.md-content__inner h1")))
    assert "lit_rl" in browser.title
    assert h1.text.strip() == "lit_rl"
    labels = browser.find_elements(By.CSS_SELECTOR, "nav.md-nav--primary li.md-nav__item--section > label.md-nav__link")
    assert [label.text.strip() for label in labels] == SECTIONS
    # The theme's stylesheet applied: the header bar is the palette's colour, not an unstyled block.
    header = browser.find_element(By.CSS_SELECTOR, "header.md-header")
    assert header.value_of_css_property("background-color") not in ("rgba(0, 0, 0, 0)", "transparent")
    shoot(browser, screenshots, "home")


def test_nav_link_opens_algorithm_page_with_defaults_table(site: str, browser: WebDriver, screenshots: Path) -> None:
    browser.get(site)
    link = wait(browser).until(
        ec.element_to_be_clickable(
            (
                By.XPATH,
                "//nav[contains(@class,'md-nav--primary')]//a[contains(@class,'md-nav__link')]"
                "[normalize-space(.)='CrossQ']",
            )
        )
    )
    link.click()
    wait(browser).until(ec.url_contains("algorithms/crossq/"))
    wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "article.md-content__inner h1"), "CrossQ"))
    assert browser.find_element(By.CSS_SELECTOR, "article.md-content__inner h1").text.strip() == "CrossQ"
    shoot(browser, screenshots, "crossq")
    cells = browser.find_elements(By.XPATH, "//article//table//td[normalize-space(.)='algo.policy_delay']")
    assert cells, "the generated defaults table has no `algo.policy_delay` cell"
    table = cells[0].find_element(By.XPATH, "ancestor::table[1]")
    headers = [th.text.strip() for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert headers == ["launcher key", "Python argument type", "default"]
    # The table is generated from the constructor's signature: the row shows the code's default.
    row = [td.text.strip() for td in cells[0].find_elements(By.XPATH, "ancestor::tr[1]/td")]
    assert row[2] == str(inspect.signature(CrossQ).parameters["policy_delay"].default)
    # Scrolled to its heading, the table's header row shows below the sticky page header.
    heading = table.find_element(By.XPATH, "preceding::h2[1]")
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'});", heading)
    # Scrolled past the h1, the header cross-fades from the site name to the page title: shoot once it settled.
    site_name = "return getComputedStyle(document.querySelector('.md-header__topic')).opacity"
    wait(browser).until(lambda driver: driver.execute_script(site_name) == "0")
    shoot(browser, screenshots, "crossq-defaults")


def test_api_reference_renders_class_signature(site: str, browser: WebDriver, screenshots: Path) -> None:
    browser.get(site + "reference/algorithms/")
    heading = wait(browser).until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, "h2.doc-heading[id='lit_rl.CrossQ']"))
    )
    assert heading.text.strip().startswith("CrossQ")
    signature = heading.find_element(By.XPATH, "following-sibling::div[contains(@class,'doc-signature')][1]")
    assert signature.text.startswith("CrossQ(")
    assert "learning_rate" in signature.text
    shoot(browser, screenshots, "reference-algorithms")


def test_search_finds_batchrenorm_and_opens_result(site: str, browser: WebDriver) -> None:
    browser.get(site)
    box = wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, "input.md-search__input")))
    if not box.is_displayed():  # narrow layouts hide the box behind the header's search button
        browser.find_element(By.CSS_SELECTOR, "label.md-header__button[for='__search']").click()
    wait(browser).until(ec.element_to_be_clickable(box)).click()
    box.send_keys("BatchRenorm")
    wait(browser).until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, ".md-search-result__item a.md-search-result__link"))
    )
    items = browser.find_elements(By.CSS_SELECTOR, ".md-search-result__item")
    assert len(items) >= 1
    before = browser.current_url
    first = items[0].find_element(By.CSS_SELECTOR, "a.md-search-result__link")
    target = first.get_attribute("href")
    assert target
    first.click()
    wait(browser).until(ec.url_changes(before))
    wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, "article.md-content__inner h1")))
    assert browser.current_url.split("#")[0].split("?")[0] == target.split("#")[0].split("?")[0]
    assert "BatchRenorm" in browser.find_element(By.CSS_SELECTOR, "article.md-content__inner").text
